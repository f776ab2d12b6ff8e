// The data-parallel training loop behind ringdp-train (main.cpp only parses flags).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autograd/module.h"
#include "comm/communicator.h"

namespace ringdp::train {

/// --resume: what a run does with the --checkpoint file it is given.
enum class ResumeMode {
  never,  ///< start fresh (the default; the checkpoint, if any, is overwritten at the first save)
  always,  ///< bare --resume: continue from the checkpoint, which must exist
  automatic,  ///< --resume auto: continue when the checkpoint exists, else start fresh (a requeued job)
};

struct TrainConfig {
  std::string model = "linear";  ///< linear | mlp
  std::vector<int64_t> hidden = {16};  ///< mlp hidden sizes
  int64_t samples = 100;  ///< per rank (synthetic data)
  int64_t features = 10;
  int64_t batch_size = 0;  ///< per rank; 0 = the whole shard
  int64_t epochs = 10;
  double lr = 0.01, momentum = 0, weight_decay = 0;
  std::string optimizer = "sgd";  ///< sgd | adam | adamw (apps/train/optimizer_setup.h)
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  ///< adam, adamw: PyTorch's defaults
  bool betas_given = false, eps_given = false;  ///< so sgd can refuse them
  bool zero = false;  ///< --zero: ZeroRedundancyOptimizer shards the optimizer state
  uint64_t seed = 0;
  bool shuffle = true;
  std::string data_path;
  std::string device = "auto";
  std::string backend = "auto";
  comm::Algorithm algorithm = comm::Algorithm::automatic;
  double bucket_mb = 25;
  double first_bucket_mb = 1;  // PyTorch's first bucket: small, so the first all-reduce starts early
  std::string checkpoint_path;
  int64_t save_every = 1;
  ResumeMode resume = ResumeMode::never;
  std::string init_path, export_path;
  bool verbose = false;
  bool overlap = true;  ///< --no-overlap: all-reduce only after backward
  bool explain = false;  ///< --explain: narrate one step (apps/train/explain.h)
  /// --uneven: pad (repeat samples so every rank has as many, PyTorch's DistributedSampler) or
  /// join (every sample once; a rank out of batches shadows the others, comm/ddp/join.h).
  std::string uneven = "pad";
  bool find_unused_parameters = false;  ///< --find-unused-parameters (DdpOptions)
  std::string comm_hook = "none";  ///< --comm-hook (apps/train/comm_hook_setup.h)
};

/// The model of config (linear, or an MLP of config.hidden) on `device`, seeded by config.seed.
std::shared_ptr<autograd::Module> build_model(const TrainConfig& config, int64_t features, Device device);

/// Trains and returns 0; throws ringdp::Error on failure.
int run_training(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& communicator);

}  // namespace ringdp::train

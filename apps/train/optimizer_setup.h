// ringdp-train's optimizer: --optimizer sgd|adam|adamw with its flags, wrapped in ZeRO under
// --zero; moving its state between ranks (--resume) and into checkpoints; --zero's memory report.
#pragma once

#include <memory>

#include "apps/train/trainer.h"
#include "autograd/optim/optimizer.h"
#include "comm/ddp/zero_redundancy_optimizer.h"

namespace ringdp::train {

struct TrainOptimizer {
  std::unique_ptr<optim::Optimizer> optimizer;
  ddp::ZeroRedundancyOptimizer* zero = nullptr;  ///< the same object, under --zero
};

/// Refuses flags that do not apply to config.optimizer (--momentum with adam, --betas with sgd).
void check_optimizer_flags(const TrainConfig& config);
/// config's optimizer over the model's trainable parameters; under --zero sharded over comm
/// (collective: every rank builds it, after DDP has made the parameters equal).
TrainOptimizer make_optimizer(const TrainConfig& config, autograd::Module& model,
                              const std::shared_ptr<comm::Communicator>& comm);
/// Rank 0's `state` on every rank (names, shapes and dtypes first, then each tensor), on `device`.
autograd::StateDict broadcast_state_dict(comm::Communicator& comm, const autograd::StateDict& state,
                                         Device device);
/// The state a checkpoint holds, in the unsharded layout; collective under --zero.
autograd::StateDict checkpoint_state(TrainOptimizer& opt);
/// --zero: rank 0 prints every rank's optimizer-state bytes against the unsharded optimizer's.
void report_zero_memory(const TrainConfig& config, comm::Communicator& comm,
                        const ddp::ZeroRedundancyOptimizer& zero);

}  // namespace ringdp::train

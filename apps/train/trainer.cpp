// Implements apps/train/trainer.h (the contract is documented there). Tested by tests/cli/train.sh.
#include "apps/train/trainer.h"
#include "apps/train/agreement.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "apps/train/comm_hook_setup.h"
#include "apps/train/csv.h"
#include "apps/train/json_state.h"
#include "apps/train/optimizer_setup.h"
#include "autograd/checkpoint.h"
#include "autograd/layers.h"
#include "comm/ddp/distributed_data_parallel.h"
#include "comm/ddp/distributed_sampler.h"
#include "comm/ddp/join.h"
#include "config.h"
#include "core/timeline.h"
#include "kernels/device_memory.h"

namespace ringdp::train {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

std::shared_ptr<autograd::Module> build_model(const TrainConfig& config, int64_t features, Device device) {
  if (config.model == "linear")
    return std::make_shared<autograd::Linear>(autograd::LinearOptions(features, 1).device(device),
                                              config.seed);
  auto seq = std::make_shared<autograd::Sequential>();
  int64_t in = features;
  uint64_t layer_seed = config.seed;
  for (int64_t h : config.hidden) {
    seq->push_back(
        std::make_shared<autograd::Linear>(autograd::LinearOptions(in, h).device(device), layer_seed++));
    seq->push_back(std::make_shared<autograd::ReLU>());
    in = h;
  }
  seq->push_back(
      std::make_shared<autograd::Linear>(autograd::LinearOptions(in, 1).device(device), layer_seed));
  return seq;
}

namespace {
// The GPU is the communicator's choice (local rank % visible GPUs), never cuda:0 for all ranks:
// the seed put every rank on GPU 0, while the transports ran on each rank's own GPU.
Device pick_device(const TrainConfig& config, const comm::Communicator& comm) {
  const std::string& requested = config.device;
  if (requested == "cpu") return Device::cpu();
  // UCX carries host tensors only: auto trains on the CPU there.
  if (requested == "auto") return config.backend == "ucx" ? Device::cpu() : comm.device();
  RINGDP_CHECK(kernels::built_with_cuda(), "--device cuda: ringdp was built without CUDA");
  RINGDP_CHECK(kernels::cuda_device_count() > 0, "--device cuda: no CUDA device is visible on this machine");
  return comm.device();
}

void check_backend(const TrainConfig& config, Device device) {
  RINGDP_CHECK(config.backend != "nccl" || RINGDP_HAVE_NCCL,
               "--backend nccl: ringdp was built without NCCL; use --backend mpi");
  RINGDP_CHECK(config.backend != "nccl" || device.is_cuda(),
               "--backend nccl needs CUDA tensors; add --device cuda "
               "(or use --backend mpi for training on the CPU)");
}

// Before the device is picked: --device cuda with UCX is a mistake to name, not a missing GPU.
void check_ucx(const TrainConfig& config) {
  RINGDP_CHECK(config.backend != "ucx" || RINGDP_HAVE_UCX,
               "--backend ucx: ringdp was built without UCX (install libucx-dev and reconfigure); use "
               "--backend mpi");
  RINGDP_CHECK(config.backend != "ucx" || config.device != "cuda",
               "--backend ucx carries host tensors; use --device cpu, or --backend nccl or mpi for CUDA "
               "tensors");
}

// Rank 0's half of --resume: the checkpoint into the model, its optimizer state into `optimizer`;
// returns its next epoch.
int64_t load_on_rank_zero(const TrainConfig& config, int N, autograd::Module& model,
                          autograd::StateDict& optimizer) {
  autograd::Checkpoint ck = autograd::load_checkpoint(config.checkpoint_path);
  try {
    model.load_state_dict(ck.model);
  } catch (const Error& e) {
    RINGDP_FAIL("checkpoint '", config.checkpoint_path, "' does not fit this model: ", e.what());
  }
  optimizer = std::move(ck.optimizer);
  RINGDP_CHECK(ck.seed == config.seed, "checkpoint '", config.checkpoint_path, "' was written with --seed ",
               ck.seed, ", this run uses --seed ", config.seed);
  // The shards follow from seed, world size and shuffle: resuming with others would train
  // each rank on other samples than the run it continues, silently.
  RINGDP_CHECK(ck.world_size == static_cast<uint32_t>(N) && ck.shuffle == config.shuffle, "checkpoint '",
               config.checkpoint_path, "' was written by a run of ", ck.world_size, " ranks with shuffle ",
               ck.shuffle ? "on" : "off", "; this run has ", N, " ranks with shuffle ",
               config.shuffle ? "on" : "off",
               ", so each rank would see other samples; resume with the same -np",
               " and shuffle setting, or start afresh");
  return ck.next_epoch;
}

// Whether --resume auto has a checkpoint to continue from. Only a file that is certainly absent
// means a fresh start: one that cannot be looked at (a folder without search permission) would
// otherwise send a requeued job back to epoch 1 and overwrite the checkpoint at its first save.
bool checkpoint_exists(const std::string& path) {
  std::error_code error;
  const bool exists = std::filesystem::exists(path, error);
  RINGDP_CHECK(!error, "--resume auto: cannot tell whether checkpoint '", path,
               "' exists: ", error.message());
  return exists;
}

// Rank 0's choice under --resume: the checkpoint's next epoch, or 0 where --resume auto finds none.
// Only rank 0 looks at the file, so ranks on hosts that do not share its folder still agree.
int64_t start_on_rank_zero(const TrainConfig& config, int N, autograd::Module& model,
                           autograd::StateDict& optimizer) {
  const char* path = config.checkpoint_path.c_str();
  if (config.resume == ResumeMode::automatic && !checkpoint_exists(config.checkpoint_path)) {
    std::printf("no checkpoint '%s' yet: starting at epoch 1 (--resume auto)\n", path);
    std::fflush(stdout);
    return 0;
  }
  const int64_t next_epoch = load_on_rank_zero(config, N, model, optimizer);
  std::printf("resuming from checkpoint '%s': %lld of %lld epochs done\n", path,
              static_cast<long long>(next_epoch), static_cast<long long>(config.epochs));
  std::fflush(stdout);
  return next_epoch;
}

// --resume: rank 0 reads the checkpoint (or, under auto, finds none) and every rank gets its
// epoch and the optimizer's state (loaded once the optimizer exists); the parameters follow with
// DDP's broadcast. Returns the epoch to start from.
int64_t resume(const TrainConfig& config, comm::Communicator& comm, autograd::Module& model,
               autograd::StateDict& optimizer, Device device) {
  RINGDP_CHECK(!config.checkpoint_path.empty(), "--resume needs --checkpoint PATH");
  // Every tensor a collective carries lives on the training device: the NCCL backend carries
  // CUDA tensors only, so these small host values travel there and back.
  autograd::StateDict on_rank_zero;
  const int64_t next_epoch =
      comm.rank() == 0 ? start_on_rank_zero(config, comm.size(), model, on_rank_zero) : 0;
  Tensor epoch = full({1}, static_cast<double>(next_epoch), DType::int64, device);
  comm.broadcast(epoch, 0);
  const auto start_epoch = static_cast<int64_t>(epoch.to(Device::cpu()).item());
  optimizer = broadcast_state_dict(comm, on_rank_zero, device);
  return start_epoch;
}

// One epoch on this rank: its sum of batch losses, its seconds waiting on communication, its steps.
struct EpochTotals {
  double loss_sum = 0, comm_seconds = 0;
  int64_t steps = 0;
};

// This rank's shard `mine` in batches: forward, DDP's backward, the optimizer's step.
EpochTotals train_epoch(const Dataset& data, const std::vector<int64_t>& mine, int64_t batch, Device device,
                        ddp::DistributedDataParallel& ddp, TrainOptimizer& opt) {
  optim::Optimizer& optimizer = *opt.optimizer;
  EpochTotals totals;
  const auto shard = static_cast<int64_t>(mine.size());
  Tensor x, y;
  for (int64_t begin = 0; begin < shard; begin += batch) {
    const std::vector<int64_t> rows(mine.begin() + begin, mine.begin() + std::min(begin + batch, shard));
    gather_batch(data, rows, DType::float32, device, x, y);
    optimizer.zero_grad();
    Tensor loss;
    {
      timeline::Scope span("train", "forward");
      loss = autograd::mse_loss(ddp(x), y);
    }
    ddp.backward(loss);
    {
      timeline::Scope span("train", "optimizer.step()");
      optimizer.step();
    }
    totals.loss_sum += loss.to(Device::cpu()).item();  // the host needs it: one round trip per step
    totals.comm_seconds +=
        ddp.last_stats().comm_wait_seconds + (opt.zero ? opt.zero->last_comm_seconds() : 0.0);
    ++totals.steps;
  }
  return totals;
}

// --uneven join: the epoch inside a Join, whose shadowed steps run the optimizer too, so every
// rank's optimizer state stays the same.
EpochTotals train_epoch_joined(const Dataset& data, const std::vector<int64_t>& mine, int64_t batch,
                               Device device, ddp::DistributedDataParallel& ddp, TrainOptimizer& opt) {
  ddp::Join join(ddp, {.on_shadow_step = [&opt] { opt.optimizer->step(); }});
  EpochTotals totals = train_epoch(data, mine, batch, device, ddp, opt);
  join.join();
  return totals;
}

// --uneven join: ranks may take different numbers of steps (none, even), so the epoch's loss is
// the mean over every step of every rank, summed on rank 0.
double reduce_joined_epoch_loss(comm::Communicator& comm, EpochTotals& totals, Device device) {
  Tensor sums =
      from_vector({totals.loss_sum, static_cast<double>(totals.steps)}, {2}, DType::float64).to(device);
  const auto start = Clock::now();
  comm.reduce(sums, 0, ReduceOp::sum);
  totals.comm_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  const std::vector<double> host = sums.to(Device::cpu()).to_vector();
  return host[1] > 0 ? host[0] / host[1] : 0.0;
}

// The epoch's loss is the mean over ranks of each rank's mean batch loss: a reduce to rank 0,
// whose time counts as communication. Returns it on rank 0.
double reduce_epoch_loss(comm::Communicator& comm, EpochTotals& totals, Device device) {
  Tensor epoch_loss = full({1}, totals.loss_sum / static_cast<double>(totals.steps), DType::float64, device);
  const auto reduce_start = Clock::now();
  comm.reduce(epoch_loss, 0, ReduceOp::avg);
  const double mean_loss = epoch_loss.to(Device::cpu()).item();
  totals.comm_seconds += std::chrono::duration<double>(Clock::now() - reduce_start).count();
  return mean_loss;
}

// `samples`: what the epoch trained on, over all ranks (padding included under --uneven pad).
void report_epoch(const TrainConfig& config, const comm::Communicator& comm, int64_t epoch, int64_t samples,
                  double mean_loss, const EpochTotals& totals, double elapsed) {
  const int rank = comm.rank();
  // Only rank 0 holds the mean loss: its error ends the whole job (fail_job's MPI_Abort).
  RINGDP_CHECK(rank != 0 || std::isfinite(mean_loss), "training diverged in epoch ", epoch + 1,
               ": the mean loss is ", mean_loss, "; lower --lr (now ", config.lr,
               ") or check the data for extreme values");
  if (rank == 0) {
    std::printf("epoch %lld/%lld  loss %.6f  samples/s %.0f  comm %.0f%%\n",
                static_cast<long long>(epoch + 1), static_cast<long long>(config.epochs), mean_loss,
                static_cast<double>(samples) / elapsed, 100.0 * totals.comm_seconds / elapsed);
    std::fflush(stdout);
  } else if (config.verbose) {
    std::printf("rank %d: epoch %lld  local loss %.6f\n", rank, static_cast<long long>(epoch + 1),
                totals.loss_sum / totals.steps);
  }
}

// Gradients are averaged before every step, so the parameters are the same on every rank and
// so is this verdict: no rank goes on alone, and no epoch after it prints "loss -nan".
void check_parameters_finite(const TrainConfig& config, const autograd::Module& model, int64_t epoch,
                             int rank, const EpochTotals& totals) {
  for (const auto& [name, p] : model.named_parameters()) {
    for (const double v : p.to_vector()) {
      RINGDP_CHECK(std::isfinite(v), "training diverged in epoch ", epoch + 1, ": parameter '", name,
                   "' holds ", v, " after the step (mean batch loss on rank ", rank, ": ",
                   totals.loss_sum / static_cast<double>(totals.steps), "); lower --lr (now ", config.lr,
                   ") or check the data for extreme values");
    }
  }
}

// Every --save-every epochs and after the last, from rank 0; every rank calls it (under --zero the
// state is gathered from the shards first).
void save_if_due(const TrainConfig& config, int64_t epoch, int rank, int N, const autograd::Module& model,
                 TrainOptimizer& opt) {
  const bool due = !config.checkpoint_path.empty() &&
                   ((epoch + 1) % std::max<int64_t>(config.save_every, 1) == 0 || epoch + 1 == config.epochs);
  if (!due) return;
  autograd::StateDict optimizer = checkpoint_state(opt);
  if (rank != 0) return;
  autograd::save_checkpoint(config.checkpoint_path,
                            autograd::Checkpoint{.next_epoch = epoch + 1,
                                                 .seed = config.seed,
                                                 .world_size = static_cast<uint32_t>(N),
                                                 .shuffle = config.shuffle,
                                                 .model = model.state_dict(),
                                                 .optimizer = std::move(optimizer)});
}
}  // namespace

int run_training(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& communicator) {
  comm::Communicator& comm = *communicator;
  const int N = comm.size(), rank = comm.rank();
  check_ucx(config);
  const Device device = pick_device(config, comm);
  check_backend(config, device);
  const Dataset data = agreed_dataset(config, comm);
  auto model = build_model(config, data.features.size(1), device);
  if (!config.init_path.empty()) {
    // Every rank reads it; DDP's broadcast below makes rank 0's copy the one that counts.
    model->load_state_dict(read_state_json(config.init_path));
  }
  check_optimizer_flags(config);
  autograd::StateDict optimizer_state;
  const int64_t start_epoch =
      config.resume != ResumeMode::never ? resume(config, comm, *model, optimizer_state, device) : 0;

  ddp::DistributedDataParallel ddp(model, communicator,
                                   {.bucket_cap_mb = config.bucket_mb,
                                    .first_bucket_mb = config.first_bucket_mb,
                                    .algorithm = config.algorithm,
                                    .overlap = config.overlap,
                                    .sync_gradients = !config.zero,
                                    .find_unused_parameters = config.find_unused_parameters});
  const CommHookChoice hook = parse_comm_hook(config.comm_hook);
  RINGDP_CHECK(!config.zero || hook.kind == CommHookChoice::Kind::none, "--comm-hook ", config.comm_hook,
               " with --zero: ZeroRedundancyOptimizer reduce-scatters the gradients itself, so no hook runs");
  const auto powersgd = install_comm_hook(hook, ddp, communicator);
  // After DDP's broadcast: ZeRO's shards start from rank 0's parameters.
  TrainOptimizer opt = make_optimizer(config, *model, communicator);
  if (!optimizer_state.empty()) opt.optimizer->load_state_dict(optimizer_state);
  const bool join = config.uneven == "join";
  RINGDP_CHECK(!join || !config.zero,
               "--uneven join does not work with --zero (ZeRO's step communicates "
               "too, and a joined rank would not shadow it); use --uneven pad");
  ddp::DistributedSampler sampler(data.features.size(0), rank, N, config.shuffle, config.seed, !join);
  const int64_t shard = sampler.shard_size();
  const int64_t batch = config.batch_size > 0 ? std::min(config.batch_size, shard) : shard;
  RINGDP_CHECK(start_epoch <= config.epochs, "checkpoint is at epoch ", start_epoch, " but --epochs is ",
               config.epochs);
  for (int64_t epoch = start_epoch; epoch < config.epochs; ++epoch) {
    const auto epoch_start = Clock::now();
    sampler.set_epoch(epoch);
    EpochTotals totals = join ? train_epoch_joined(data, sampler.indices(), batch, device, ddp, opt)
                              : train_epoch(data, sampler.indices(), batch, device, ddp, opt);
    const double mean_loss =
        join ? reduce_joined_epoch_loss(comm, totals, device) : reduce_epoch_loss(comm, totals, device);
    const double elapsed = std::chrono::duration<double>(Clock::now() - epoch_start).count();
    report_epoch(config, comm, epoch, join ? data.features.size(0) : shard * N, mean_loss, totals, elapsed);
    check_parameters_finite(config, *model, epoch, rank, totals);
    if (opt.zero && epoch == start_epoch) report_zero_memory(config, comm, *opt.zero);
    save_if_due(config, epoch, rank, N, *model, opt);
  }
  if (rank == 0 && !config.export_path.empty()) write_state_json(config.export_path, model->state_dict());
  if (powersgd && rank == 0)  // elements before / after compression, over the compressed steps
    std::printf("%s: compression rate %.3g\n", describe(hook).c_str(), powersgd->compression_rate());
  comm.barrier();
  if (rank == 0) std::printf("Finished training\n");
  return 0;
}

}  // namespace ringdp::train

// ringdp-train --explain --uneven join: one epoch on ranks whose shards differ, told by rank 0:
// the unpadded shards, then for every step what each rank puts into bucket 0's all-reduce at one
// element (a joined rank's zeros), the divisor (the ranks that had a batch) and the average, and
// at the end that every rank holds the same parameters. Every function runs on every rank, so the
// collectives match; rank 0 prints. Tested by tests/cli/train.sh (case explain-join).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "apps/train/agreement.h"
#include "apps/train/csv.h"
#include "apps/train/dataset.h"
#include "apps/train/explain.h"
#include "apps/train/optimizer_setup.h"
#include "autograd/functions.h"
#include "comm/ddp/distributed_data_parallel.h"
#include "comm/ddp/distributed_sampler.h"
#include "comm/ddp/join.h"

namespace ringdp::train {

namespace {

// One rank's view of each step k of the epoch, at element 0 of bucket 0.
struct StepColumn {
  std::vector<double> joined;  // [k]: 1 when this rank was in join() (added zeros) at step k
  std::vector<double> before;  // [k]: what this rank put into the all-reduce
  std::vector<double> after;  // [k]: the average it got back
};

// Every rank's `mine` (n values), rank-major. Every rank must call it.
std::vector<double> gather_all(comm::Communicator& comm, const std::vector<double>& mine) {
  const auto n = static_cast<int64_t>(mine.size());
  Tensor out = zeros({n * comm.size()}, DType::float64);
  comm.all_gather(from_vector(mine, {n}, DType::float64), out);
  return out.to_vector();
}

// The epoch, recording each step's element before (at the launch or the shadow event, the moment
// the all-reduce starts) and after (once backward, or the shadowed step, has ended).
StepColumn run_epoch(const Dataset& data, const std::vector<int64_t>& mine, int64_t batch, int64_t steps,
                     ddp::DistributedDataParallel& ddp, optim::Optimizer& sgd, double& element_before) {
  StepColumn column{std::vector<double>(steps, 0.0), std::vector<double>(steps, 0.0),
                    std::vector<double>(steps, 0.0)};
  const auto element = [&ddp] { return static_cast<double>(ddp.bucket_buffer(0).data<float>()[0]); };
  int64_t step = 0;
  ddp::Join join(ddp, {.on_shadow_step = [&] {
                   column.joined[step] = 1;
                   column.before[step] = element_before;
                   column.after[step] = element();
                   sgd.step();
                   ++step;
                 }});
  Tensor x, y;
  const auto shard = static_cast<int64_t>(mine.size());
  for (int64_t begin = 0; begin < shard; begin += batch, ++step) {
    const std::vector<int64_t> rows(mine.begin() + begin, mine.begin() + std::min(begin + batch, shard));
    gather_batch(data, rows, DType::float32, Device::cpu(), x, y);
    sgd.zero_grad();
    ddp.backward(autograd::mse_loss(ddp(x), y));
    column.before[step] = element_before;
    column.after[step] = element();
    sgd.step();
  }
  join.join();
  return column;
}

void print_shards(const TrainConfig& config, int N, int64_t samples, const std::vector<double>& shards,
                  int64_t batch) {
  std::printf(
      "ringdp-train --explain --uneven join: one epoch of the %s model on %d rank%s whose shards differ, "
      "told by rank 0.\n\n",
      config.model.c_str(), N, N == 1 ? "" : "s");
  std::printf("1. No padding: %lld samples, rank r takes positions r, r + %d, ... of the epoch's order:\n",
              static_cast<long long>(samples), N);
  for (int r = 0; r < N; ++r) {
    const auto shard = static_cast<int64_t>(shards[r]);
    std::printf("     rank %d: %lld sample%s, %lld step%s of at most %lld\n", r,
                static_cast<long long>(shard), shard == 1 ? "" : "s",
                static_cast<long long>((shard + batch - 1) / batch),
                (shard + batch - 1) / batch == 1 ? "" : "s", static_cast<long long>(batch));
  }
}

void print_steps(int N, int64_t steps, const std::string& followed, const std::vector<double>& table) {
  // table: rank-major, each rank's joined[steps], before[steps], after[steps].
  const auto at = [&](int r, int part, int64_t k) { return table[(r * 3 + part) * steps + k]; };
  std::printf(
      "\n2. Each forward first all-reduces [contributing, syncing]; a rank out of batches is in join(),\n"
      "   adds [0, 0] and then all-reduces zeros for every bucket, so the collectives still match.\n"
      "   Element 0 of bucket 0 (%s's gradient) as each rank puts it into the all-reduce (sum),\n"
      "   the divisor (the ranks that had a batch) and the average every rank gets back:\n     step",
      followed.c_str());
  for (int r = 0; r < N; ++r) std::printf("       rank %d", r);
  std::printf("  divisor     average\n");
  for (int64_t k = 0; k < steps; ++k) {
    std::printf("     %4lld", static_cast<long long>(k + 1));
    int contributing = 0;
    for (int r = 0; r < N; ++r) {
      const bool joined = at(r, 0, k) != 0;
      contributing += joined ? 0 : 1;
      char cell[32];
      if (joined)
        std::snprintf(cell, sizeof cell, "0 (joined)");
      else
        std::snprintf(cell, sizeof cell, "%.6g", at(r, 1, k));
      std::printf(" %12s", cell);
    }
    std::printf("  %7d  %10.6g\n", contributing, at(0, 2, k));
  }
}

}  // namespace

int run_explain_join(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& communicator) {
  comm::Communicator& comm = *communicator;
  const int N = comm.size();
  RINGDP_CHECK(config.device != "cuda",
               "--explain reads the values from host memory as each step begins; use --device cpu");
  const Dataset data = agreed_dataset(config, comm);
  auto model = build_model(config, data.features.size(1), Device::cpu());
  double element_before = 0;
  ddp::DistributedDataParallel* wrapper = nullptr;
  ddp::DistributedDataParallel ddp(model, communicator,
                                   {.bucket_cap_mb = config.bucket_mb,
                                    .first_bucket_mb = config.first_bucket_mb,
                                    .algorithm = config.algorithm,
                                    .find_unused_parameters = config.find_unused_parameters,
                                    .on_event = [&](const ddp::DdpEvent& e) {
                                      const bool starts = e.kind == ddp::DdpEvent::Kind::launch ||
                                                          e.kind == ddp::DdpEvent::Kind::shadow;
                                      if (starts && e.bucket == 0)
                                        element_before = wrapper->bucket_buffer(0).data<float>()[0];
                                    }});
  wrapper = &ddp;
  TrainOptimizer opt = make_optimizer(config, *model, communicator);
  ddp::DistributedSampler sampler(data.features.size(0), comm.rank(), N, config.shuffle, config.seed, false);
  const int64_t batch =
      config.batch_size > 0 ? std::min(config.batch_size, sampler.shard_size()) : sampler.shard_size();
  const int64_t steps = (sampler.shard_size() + batch - 1) / batch;  // rank 0's: the most
  const StepColumn column =
      run_epoch(data, sampler.indices(), batch, steps, ddp, *opt.optimizer, element_before);
  std::vector<double> mine = column.joined;
  mine.insert(mine.end(), column.before.begin(), column.before.end());
  mine.insert(mine.end(), column.after.begin(), column.after.end());
  const std::vector<double> table = gather_all(comm, mine);
  const std::vector<double> shards = gather_all(comm, {static_cast<double>(sampler.indices().size())});
  std::vector<double> params;
  for (const Tensor& p : model->parameters())
    for (double v : p.to_vector()) params.push_back(v);
  const std::vector<double> all_params = gather_all(comm, params);
  if (comm.rank() != 0) return 0;
  print_shards(config, N, data.features.size(0), shards, batch);
  print_steps(N, steps, ddp.bucket_layout()[0][0], table);
  double worst = 0;
  for (size_t i = 0; i < all_params.size(); ++i)
    worst = std::max(worst, std::fabs(all_params[i] - all_params[i % params.size()]));
  std::printf(
      "\n3. After the epoch every rank holds the last joiner's parameters, and each joined rank ran its\n"
      "   optimizer on every shadowed average: largest difference from rank 0's parameters %g.\n",
      worst);
  return 0;
}

}  // namespace ringdp::train

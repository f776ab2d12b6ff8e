// ringdp-train --explain --zero: one step of ZeroRedundancyOptimizer, told by rank 0: the flat
// layout, each rank's shard boundaries (which parameters, or parts of them, it owns), one gradient
// element through the reduce-scatter, the owner's step and the all-gather, and the optimizer state
// each rank holds. Every function runs on every rank (the collectives match); rank 0 prints.
// Tested by tests/cli/train.sh (case zero).
#include <cstdio>
#include <string>
#include <vector>

#include "apps/train/agreement.h"
#include "apps/train/csv.h"
#include "apps/train/explain.h"
#include "apps/train/optimizer_setup.h"
#include "autograd/functions.h"
#include "comm/ddp/distributed_data_parallel.h"
#include "comm/ddp/distributed_sampler.h"

namespace ringdp::train {

namespace {
// Every rank's value, in rank order.
std::vector<double> gather_values(comm::Communicator& comm, double mine) {
  Tensor out = zeros({comm.size()}, DType::float64);
  comm.all_gather(full({1}, mine, DType::float64), out);
  return out.to_vector();
}

std::string values_row(const std::vector<double>& values) {
  std::string out;
  for (double v : values) {
    char cell[24];
    std::snprintf(cell, sizeof cell, "%12.6g", v);
    out += cell;
  }
  return out;
}

// The pieces of [begin, end) of the flat buffer: "0.weight[30:40) + 0.bias[0:8) + padding[85:87)".
std::string pieces(const ddp::ZeroRedundancyOptimizer& zero, int64_t begin, int64_t end) {
  std::string out;
  for (const ddp::ShardSpan& span : zero.layout()) {
    const int64_t lo = std::max(begin, span.begin), hi = std::min(end, span.end);
    if (lo >= hi) continue;
    out += (out.empty() ? "" : " + ") + span.parameter + "[" + std::to_string(lo - span.begin) + ":" +
           std::to_string(hi - span.begin) + ")";
  }
  const int64_t pad_lo = std::max(begin, zero.total_elements());
  if (pad_lo < end)
    out += (out.empty() ? "" : " + ") + std::string("padding[") + std::to_string(pad_lo) + ":" +
           std::to_string(end) + ")";
  return out;
}

void print_layout(const TrainConfig& config, int N, const ddp::ZeroRedundancyOptimizer& zero) {
  const int64_t P = zero.total_elements(), S = zero.shard_elements();
  std::printf("ZeRO: one step of %s on %d rank(s), the optimizer state sharded (docs/ddp.md)\n\n",
              config.optimizer.c_str(), N);
  std::printf(
      "1. The flat layout: the parameters end to end, %lld elements, padded with %lld zeros to %d "
      "shards of S = ceil(%lld/%d) = %lld\n",
      static_cast<long long>(P), static_cast<long long>(S * N - P), N, static_cast<long long>(P), N,
      static_cast<long long>(S));
  for (const ddp::ShardSpan& span : zero.layout())
    std::printf("   %-12s elements [%lld, %lld)\n", span.parameter.c_str(),
                static_cast<long long>(span.begin), static_cast<long long>(span.end));
  std::printf(
      "\n2. Shard boundaries: rank r owns elements [r x %lld, (r+1) x %lld) and keeps %s's state for "
      "them only\n",
      static_cast<long long>(S), static_cast<long long>(S), config.optimizer.c_str());
  for (int r = 0; r < N; ++r)
    std::printf("   rank %d  [%lld, %lld)  %s\n", r, static_cast<long long>(r * S),
                static_cast<long long>((r + 1) * S), pieces(zero, r * S, (r + 1) * S).c_str());
}

// The flat element followed: the first of the last shard that holds a parameter's element, so
// with N > 1 its owner is not rank 0.
int64_t followed_element(const ddp::ZeroRedundancyOptimizer& zero, int N) {
  for (int r = N - 1; r >= 0; --r)
    if (r * zero.shard_elements() < zero.total_elements()) return r * zero.shard_elements();
  return 0;
}

// The value of flat element `e` in the parameters (grad: in their gradients).
double flat_value(const ddp::ZeroRedundancyOptimizer& zero, const autograd::Module& model, int64_t e,
                  bool grad) {
  const auto named = model.named_parameters();
  for (const ddp::ShardSpan& span : zero.layout()) {
    if (e < span.begin || e >= span.end) continue;
    for (const auto& [name, p] : named)
      if (name == span.parameter)
        return (grad ? p.grad() : p).to(Device::cpu()).flat_view(e - span.begin, 1).item();
  }
  RINGDP_FAIL("--explain --zero: no parameter holds flat element ", e);
}
}  // namespace

int run_explain_zero(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& communicator) {
  comm::Communicator& comm = *communicator;
  const int N = comm.size(), rank = comm.rank();
  const Dataset data = agreed_dataset(config, comm);
  auto model = build_model(config, data.features.size(1), Device::cpu());
  ddp::DistributedDataParallel ddp(model, communicator, {.sync_gradients = false});
  TrainOptimizer opt = make_optimizer(config, *model, communicator);
  const ddp::ZeroRedundancyOptimizer& zero = *opt.zero;
  if (rank == 0) print_layout(config, N, zero);
  ddp::DistributedSampler sampler(data.features.size(0), rank, N, config.shuffle, config.seed);
  sampler.set_epoch(0);
  const int64_t batch =
      config.batch_size > 0 ? std::min(config.batch_size, sampler.shard_size()) : sampler.shard_size();
  const std::vector<int64_t> mine = sampler.indices();
  Tensor x, y;
  gather_batch(data, std::vector<int64_t>(mine.begin(), mine.begin() + batch), DType::float32, Device::cpu(),
               x, y);
  opt.optimizer->zero_grad();
  ddp.backward(autograd::mse_loss(ddp(x), y));
  const int64_t e = followed_element(zero, N);
  const int owner = static_cast<int>(e / zero.shard_elements());
  const std::vector<double> grads = gather_values(comm, flat_value(zero, *model, e, true));
  const double before = flat_value(zero, *model, e, false);
  opt.optimizer->step();
  const std::vector<double> after = gather_values(comm, flat_value(zero, *model, e, false));
  if (rank == 0) {
    double mean = 0;
    for (double g : grads) mean += g / N;
    std::printf("\n3. Backward, no all-reduce: flat element %lld (%s), each rank's own gradient:\n   %s\n",
                static_cast<long long>(e), pieces(zero, e, e + 1).c_str(), values_row(grads).c_str());
    std::printf(
        "\n4. reduce_scatter(avg) of the flat gradients: element %lld lies in rank %d's shard, so "
        "only rank %d receives its average, %.6g\n",
        static_cast<long long>(e), owner, owner, mean);
    std::printf("\n5. Rank %d steps its shard with %s: element %lld goes from %.6g to %.6g\n", owner,
                config.optimizer.c_str(), static_cast<long long>(e), before, after[owner]);
    std::printf("\n6. all_gather of the shards: every rank now holds %.6g at element %lld:\n   %s\n",
                after[owner], static_cast<long long>(e), values_row(after).c_str());
  }
  bool same = true;
  for (double v : after) same = same && v == after[0];
  RINGDP_CHECK(same, "--explain --zero: the ranks' parameters differ after the step");
  if (rank == 0) std::printf("\n");
  report_zero_memory(config, comm, zero);
  comm.barrier();
  return 0;
}

}  // namespace ringdp::train

// Implements apps/bench/soak.h (the contract is documented there). Tested by tests/cli/bench.sh soak.
#include "apps/bench/soak.h"

#include <unistd.h>
#include <fstream>
#include <iterator>

#include "apps/bench/collectives.h"
#include "comm/algorithm_table.h"
#include "tensor/random.h"

namespace ringdp::bench {

namespace {

double resident_mb() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

}  // namespace

SoakResult run_soak(comm::Communicator& comm, int64_t count, uint64_t seed) {
  const auto& table = collective_table();
  const DType dtypes[] = {DType::float32, DType::float64, DType::int32, DType::int64,  DType::bfloat16,
                          DType::float16, DType::int8,    DType::uint8, DType::boolean};
  constexpr uint32_t kDTypes = std::size(dtypes);
  const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg};
  const int N = comm.size();
  SoakResult result;
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    const auto draw = random::philox4x32(static_cast<uint64_t>(i), seed);
    const CollectiveSpec& spec = table[draw[0] % table.size()];
    const DType dtype = dtypes[draw[1] % kDTypes];
    ReduceOp op = ops[(draw[1] / kDTypes) % 5];
    if (op == ReduceOp::avg && !is_floating(dtype)) op = ReduceOp::sum;
    // One of the collective's own algorithms (comm/algorithm_table.h), or auto.
    const auto rows = comm::algorithm_table(spec.kind);
    const size_t pick = draw[2] % (rows.size() + 1);
    comm::Algorithm algo = pick < rows.size() ? rows[pick].algorithm : comm::Algorithm::automatic;
    if (!comm.available(spec.kind, comm.device()).contains(algo))
      algo = comm::Algorithm::automatic;  // not in this world (shared memory across hosts)
    // Sizes from 0 to 64 Ki elements, skewed small (a log-uniform draw).
    const int64_t elements =
        static_cast<int64_t>(draw[3] % 17 == 0 ? 0 : (int64_t{1} << (draw[3] % 17)) - 1 + draw[3] % 7);
    const int root = static_cast<int>((draw[2] / 5) % N);
    const Case c{comm, dtype, op, root, algo};
    Tensor input = zeros({spec.input_count(elements * N, N)}, dtype);
    Tensor output = zeros({spec.output_count(elements * N, N)}, dtype);
    if (spec.kind == comm::CollectiveKind::all_reduce || spec.kind == comm::CollectiveKind::reduce ||
        spec.kind == comm::CollectiveKind::broadcast) {
      input = zeros({elements}, dtype);
      output = zeros({elements}, dtype);
    }
    fill_verifiable(spec, c, input);
    run_collective(spec, c, input, output, false);
    wrong += count_wrong(spec, c, output);
    ++result.collectives;
    if (i + 1 == std::max<int64_t>(count / 10, 1))
      result.rss_after_warmup_mb = over_ranks(comm, resident_mb(), ReduceOp::max);
  }
  result.wrong = static_cast<int64_t>(over_ranks(comm, static_cast<double>(wrong), ReduceOp::sum));
  result.rss_at_end_mb = over_ranks(comm, resident_mb(), ReduceOp::max);
  return result;
}

}  // namespace ringdp::bench

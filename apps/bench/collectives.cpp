// Implements apps/bench/collectives.h (the contract is documented there). Tested by tests/cli/bench.sh
// (table, corrupt).
#include "apps/bench/collectives.h"

#include <cmath>

#include "apps/bench/verifiable.h"

namespace ringdp::bench {

using comm::CollectiveKind;

const std::vector<CollectiveSpec>& collective_table() {
  static const std::vector<CollectiveSpec> table = {
      {"all_reduce", CollectiveKind::all_reduce, true, false, [](int N) { return 2.0 * (N - 1) / N; },
       [](int64_t e, int) { return e; }, [](int64_t e, int) { return e; }},
      {"reduce", CollectiveKind::reduce, true, true, [](int) { return 1.0; },
       [](int64_t e, int) { return e; }, [](int64_t e, int) { return e; }},
      {"broadcast", CollectiveKind::broadcast, false, true, [](int) { return 1.0; },
       [](int64_t e, int) { return e; }, [](int64_t e, int) { return e; }},
      {"all_gather", CollectiveKind::all_gather, false, false, [](int N) { return (N - 1.0) / N; },
       [](int64_t e, int N) { return e / N; }, [](int64_t e, int N) { return e / N * N; }},
      {"reduce_scatter", CollectiveKind::reduce_scatter, true, false, [](int N) { return (N - 1.0) / N; },
       [](int64_t e, int N) { return e / N * N; }, [](int64_t e, int N) { return e / N; }},
      {"barrier", CollectiveKind::barrier, false, false, [](int) { return 0.0; },
       [](int64_t, int) { return int64_t{0}; }, [](int64_t, int) { return int64_t{0}; }},
      // nccl-tests' gather_perf, scatter_perf and alltoall_perf: the size is the root's whole
      // buffer (every rank's for alltoall), N blocks of size/N, and busbw = algbw · (N−1)/N.
      {"gather", CollectiveKind::gather, false, true, [](int N) { return (N - 1.0) / N; },
       [](int64_t e, int N) { return e / N; }, [](int64_t e, int N) { return e / N * N; }},
      {"scatter", CollectiveKind::scatter, false, true, [](int N) { return (N - 1.0) / N; },
       [](int64_t e, int N) { return e / N * N; }, [](int64_t e, int N) { return e / N; }},
      {"alltoall", CollectiveKind::all_to_all, false, false, [](int N) { return (N - 1.0) / N; },
       [](int64_t e, int N) { return e / N * N; }, [](int64_t e, int N) { return e / N * N; }},
  };
  return table;
}

const CollectiveSpec& find_collective(const std::string& name) {
  for (const auto& spec : collective_table())
    if (name == spec.name) return spec;
  RINGDP_FAIL("unknown collective '", name,
              "'; expected all_reduce, reduce, broadcast, all_gather, "
              "reduce_scatter, barrier, gather, scatter, alltoall or all");
}

comm::Work run_collective(const CollectiveSpec& spec, const Case& c, Tensor& input, Tensor& output,
                          bool async) {
  const comm::CollectiveOptions opts{.algorithm = c.algorithm, .async = async};
  switch (spec.kind) {
    case CollectiveKind::all_reduce: return c.comm.all_reduce(input, output, c.op, opts);
    case CollectiveKind::reduce: return c.comm.reduce(input, output, c.root, c.op, opts);
    case CollectiveKind::broadcast: return c.comm.broadcast(input, output, c.root, opts);
    case CollectiveKind::all_gather: return c.comm.all_gather(input, output, opts);
    case CollectiveKind::reduce_scatter: return c.comm.reduce_scatter(input, output, c.op, opts);
    case CollectiveKind::gather: return c.comm.gather(input, output, c.root, opts);
    case CollectiveKind::scatter: return c.comm.scatter(input, output, c.root, opts);
    case CollectiveKind::all_to_all: return c.comm.all_to_all(input, output, opts);
    default: return c.comm.barrier(opts);
  }
}

namespace {
// The value the rank's output must hold at `index`.
double expected_at(const CollectiveSpec& spec, const Case& c, int64_t index, int64_t out_count) {
  const int N = c.comm.size(), rank = c.comm.rank();
  switch (spec.kind) {
    case CollectiveKind::broadcast: return verifiable_input(c.root, index, ReduceOp::min, c.dtype);
    case CollectiveKind::all_gather: {
      const int64_t chunk = out_count / N;
      return verifiable_input(static_cast<int>(index / chunk), index, ReduceOp::min, c.dtype);
    }
    case CollectiveKind::reduce_scatter: return verifiable_result(N, rank * out_count + index, c.op, c.dtype);
    case CollectiveKind::gather: {  // rank i's input element e was filled as index i·block + e
      const int64_t block = out_count / N;
      return verifiable_input(static_cast<int>(index / block), index, ReduceOp::min, c.dtype);
    }
    case CollectiveKind::scatter:
      return verifiable_input(c.root, rank * out_count + index, ReduceOp::min, c.dtype);
    case CollectiveKind::all_to_all: {  // block i came from rank i: its block for this rank
      const int64_t block = out_count / N;
      return verifiable_input(static_cast<int>(index / block), rank * block + index % block, ReduceOp::min,
                              c.dtype);
    }
    default: return verifiable_result(N, index, c.op, c.dtype);
  }
}
}  // namespace

double over_ranks(comm::Communicator& comm, double value, ReduceOp op) {
  Tensor t = full({1}, value, DType::float64);
  comm.all_reduce(t, op);
  return t.item();
}

void fill_verifiable(const CollectiveSpec& spec, const Case& c, Tensor& input) {
  Tensor host(input.shape(), DType::float64);
  const int rank = c.comm.rank();
  const int64_t n = host.numel();
  for (int64_t i = 0; i < n; ++i) {
    switch (spec.kind) {
      case CollectiveKind::broadcast:
        host.data<double>()[i] = verifiable_input(rank, i, ReduceOp::min, c.dtype);
        break;
      case CollectiveKind::all_gather:
      case CollectiveKind::gather:
        host.data<double>()[i] = verifiable_input(rank, rank * n + i, ReduceOp::min, c.dtype);
        break;
      case CollectiveKind::scatter:
      case CollectiveKind::all_to_all:
        host.data<double>()[i] = verifiable_input(rank, i, ReduceOp::min, c.dtype);
        break;
      default: host.data<double>()[i] = verifiable_input(rank, i, c.op, c.dtype); break;
    }
  }
  input.copy_from(host);
}

int64_t count_wrong(const CollectiveSpec& spec, const Case& c, const Tensor& output) {
  if (spec.kind == CollectiveKind::barrier) return 0;
  if ((spec.kind == CollectiveKind::reduce || spec.kind == CollectiveKind::gather) && c.comm.rank() != c.root)
    return 0;
  const std::vector<double> got = output.to_vector();
  const double rtol = c.op != ReduceOp::avg || !spec.has_op ? 0.0
                      : c.dtype == DType::bfloat16          ? 1.0 / 64
                      : c.dtype == DType::float16           ? 1.0 / 256
                      : c.dtype == DType::float32           ? 1e-6
                                                            : 1e-14;
  int64_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double want = expected_at(spec, c, static_cast<int64_t>(i), static_cast<int64_t>(got.size()));
    // Equal first: an infinity (float16's prod past 15 ranks) is right when it is expected.
    wrong += !(got[i] == want || std::fabs(got[i] - want) <= rtol * std::fabs(want));
  }
  return wrong;
}

}  // namespace ringdp::bench

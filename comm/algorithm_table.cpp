// Implements comm/algorithm_table.h (the contract is documented there). Tested by
// tests/unit/test_algorithm_table.cpp, and every row under mpirun by tests/mpi/test_collectives.cpp.
#include "comm/algorithm_table.h"

#include <array>

namespace ringdp::comm {

namespace {

using enum Algorithm;

constexpr AlgorithmRow row(Algorithm algorithm, bool host_only = false, bool one_host = false) {
  return {algorithm, wire_code(algorithm), host_only, one_host};
}

constexpr std::array kAllReduce{row(ring),
                                row(recursive_doubling),
                                row(rabenseifner),
                                row(shared_memory, true, true),
                                row(hierarchical, true),
                                row(native)};
constexpr std::array kReduce{row(tree), row(native)};
constexpr std::array kBroadcast{row(chain), row(tree), row(native)};
constexpr std::array kRing{row(ring), row(native)};  // all_gather, reduce_scatter
constexpr std::array kBarrier{row(dissemination), row(native)};
constexpr std::array kNative{row(native)};  // send, recv
constexpr std::array kTree{row(tree), row(native)};  // gather, scatter
constexpr std::array kAllToAll{row(pairwise), row(native)};

template <size_t N>
constexpr bool codes_fit_and_differ(const std::array<AlgorithmRow, N>& rows) {
  for (size_t i = 0; i < N; ++i) {
    if (rows[i].wire > 7 || rows[i].wire == wire_code(automatic)) return false;
    for (size_t j = 0; j < i; ++j)
      if (rows[i].wire == rows[j].wire) return false;
  }
  return true;
}
static_assert(codes_fit_and_differ(kAllReduce) && codes_fit_and_differ(kReduce) &&
                  codes_fit_and_differ(kBroadcast) && codes_fit_and_differ(kRing) &&
                  codes_fit_and_differ(kBarrier) && codes_fit_and_differ(kNative) &&
                  codes_fit_and_differ(kTree) && codes_fit_and_differ(kAllToAll),
              "each collective's algorithm codes must fit the tag's 3 bits, differ from auto's and from "
              "each other");

}  // namespace

std::span<const AlgorithmRow> algorithm_table(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce: return kAllReduce;
    case CollectiveKind::reduce: return kReduce;
    case CollectiveKind::broadcast: return kBroadcast;
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter: return kRing;
    case CollectiveKind::barrier: return kBarrier;
    case CollectiveKind::send:
    case CollectiveKind::recv: return kNative;
    case CollectiveKind::gather:
    case CollectiveKind::scatter: return kTree;
    case CollectiveKind::all_to_all: return kAllToAll;
  }
  return {};
}

Algorithm algorithm_of_wire(CollectiveKind kind, int wire) {
  for (const AlgorithmRow& r : algorithm_table(kind))
    if (r.wire == wire) return r.algorithm;
  return Algorithm::automatic;
}

}  // namespace ringdp::comm

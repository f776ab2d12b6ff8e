// Names shared across comm/: which collective, which algorithm.
#pragma once

#include <cstdint>
#include <string_view>

namespace ringdp::comm {

enum class CollectiveKind : uint8_t {
  all_reduce,
  reduce,
  broadcast,
  all_gather,
  reduce_scatter,
  barrier,
  send,
  recv
};

/// How a collective is computed. `native` is the transport library's own collective
/// (MPI_Allreduce, ...), kept as the baseline ours are measured against.
enum class Algorithm : uint8_t {
  automatic,
  ring,
  recursive_doubling,
  tree,
  native,
  hierarchical,
  rabenseifner
};

const char* kind_name(CollectiveKind kind);
const char* algorithm_name(Algorithm algorithm);
/// Parses auto, ring, recursive_doubling (or rd), rabenseifner, tree, native, hierarchical.
Algorithm parse_algorithm(std::string_view name);

}  // namespace ringdp::comm

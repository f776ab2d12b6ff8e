// Which algorithms each collective has, in one table per collective: the name users type, its
// code in a message tag, and what it needs of the world. Everything that asks which algorithms
// exist reads these tables: what may be asked for (comm/algorithms/algorithm_choice.h), the tag's
// algorithm field and its decoding (comm/transport/envelope.h), `ringdp-bench --algo all`. The
// code that runs each one is the collective's descriptor (comm/collectives.cpp,
// comm/block_collectives.cpp), which dispatches on the name. tests/unit/test_algorithm_table.cpp
// checks the tables against each other and against the names.
//
// A tag has 3 bits for the algorithm, so a code is unique within its collective only: all_to_all's
// pairwise exchange, broadcast's chain and the ring share code 1, as they shared the name `ring`
// before they had their own, so tags are as they were.
#pragma once

#include <cstdint>
#include <span>

#include "comm/types.h"

namespace ringdp::comm {

struct AlgorithmRow {
  Algorithm algorithm;
  uint8_t wire;  ///< its code in the tag's 3-bit algorithm field, unique within the collective
  bool host_only;  ///< host tensors only (not CUDA tensors)
  bool one_host;  ///< every rank on one host with MPI shared windows (or a world of one)
};

/// Every algorithm `kind` has, `native` included (`auto` is none: it chooses among these).
std::span<const AlgorithmRow> algorithm_table(CollectiveKind kind);

/// The code an algorithm takes in a tag: a switch, since every collective call encodes one. The
/// tables' codes agree with it (static_assert in comm/algorithm_table.cpp).
constexpr uint8_t wire_code(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::pairwise:
    case Algorithm::chain: return 1;  // ring's: no collective has both
    case Algorithm::dissemination: return 2;  // recursive_doubling's: the barrier has no other
    default: return static_cast<uint8_t>(algorithm);
  }
}

/// The algorithm of `kind` whose code is `wire`; Algorithm::automatic when it has none.
Algorithm algorithm_of_wire(CollectiveKind kind, int wire);

}  // namespace ringdp::comm

// Where the running collective is: written by the algorithms at each step (a few stores),
// read when a wait passes its deadline so the report says exactly where this rank stopped,
// and printed per step when RINGDP_TRACE=1.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "comm/types.h"
#include "core/dtype.h"

namespace ringdp::comm {

/// The part of an algorithm a step belongs to. Printed by phase_name() (traces, reports,
/// --explain) and compared as values, never as the printed words.
enum class Phase : uint8_t {
  none,
  reduce_scatter,
  all_gather,
  exchange,
  shared_memory,
  across_hosts,
  signal,
  chain,
  receive,
  forward,
  fold_in,
  unfold,
  send_up,
  gather,
  done,  ///< after the last step (StepObserver)
};
/// "reduce-scatter", "shared memory", ...; "" for none.
const char* phase_name(Phase phase);

/// The shape a collective's tensor had as the caller passed it (its first four dims), so that a
/// message names what each rank passed and not only the bytes of a chunk (issue #47 item 8).
struct ShapeNote {
  static constexpr int kDims = 4;
  int64_t dims[kDims] = {};
  int ndim = -1;  ///< -1: not recorded (the block collectives' views)
  static ShapeNote of(std::span<const int64_t> shape);
  /// "[1000, 1000]", "[2, 3, 4, 5, ...]" past four dims; "" when not recorded.
  std::string text() const;
  /// " [1000, 1000]" where the shape says more than the count; "" for one dimension or none.
  std::string suffix() const;
};

struct Position {
  CollectiveKind kind = CollectiveKind::barrier;
  uint64_t sequence = 0;  ///< collectives issued on this communicator before this one
  Algorithm algorithm = Algorithm::native;
  int64_t count = 0;
  DType dtype = DType::float32;
  ShapeNote shape{};  ///< printed when not one-dimensional: "1000000 x float32 [1000, 1000]"
  int step = 0;  ///< 1-based; 0 before the first step
  int steps = 0;
  Phase phase = Phase::none;
  int waiting_for_rank = -1;
  int chunk = -1;

  /// "all_reduce #57 (ring, 4194304 x float32, step 3/6 reduce-scatter, waiting for chunk 1 from rank 1)"
  std::string describe() const;
};

/// Watches a collective step by step (ringdp-train --explain): called on the thread running it
/// as each step begins (the values then are those after the step before) and once after the
/// last step, with step = steps + 1 and phase "done". avg: the ring and Rabenseifner on host
/// memory divide each part as its reduction completes, so later steps carry divided values;
/// the other algorithms divide after "done".
using StepObserver = std::function<void(const Position& where)>;

}  // namespace ringdp::comm

// Fault injection for tests and for practising diagnosis: RINGDP_FAULT holds a comma-separated
// list of faults, each `kind:key=value:...` with keys rank (which rank misbehaves) and op (the
// collective's sequence number on its communicator, counting from 0; send and recv are not
// collectives and are not counted):
//   delay:rank=1:op=10:ms=2000    rank 1 sleeps 2 s before collective 10
//   skip:rank=2:op=5              rank 2 does not issue collective 5 (its peers wait for it)
//   count:rank=1:op=3:delta=-1    rank 1 runs collective 3 with its count changed by delta
//                                 (negative only: a positive one is refused when parsed)
//   corrupt:rank=0:op=4           one bit of the first segment rank 0 receives in collective 4
//                                 is flipped (ringdp's own algorithms; native ones are opaque)
//   kill:rank=3:op=7              rank 3 sends itself SIGKILL when it issues collective 7
// A malformed RINGDP_FAULT is an error naming the bad part.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringdp::comm {

struct Fault {
  enum class Kind { delay, skip, count, corrupt, kill };
  Kind kind;
  int rank = -1;
  uint64_t op = 0;
  int64_t ms = 0;
  int64_t delta = 0;
};

/// What the plan asks one rank to do at one collective; the communicator carries it out.
struct FaultAction {
  bool kill = false;  ///< SIGKILL before the collective is issued
  bool skip = false;  ///< do not issue it at all
  bool corrupt = false;  ///< flip a bit of the first received segment
  int64_t delay_ms = 0;  ///< sleep this long before running it
  int64_t count_delta = 0;  ///< run it with this many elements more (clamped to the tensor)
};

class FaultPlan {
 public:
  static FaultPlan parse(const std::string& text);
  /// RINGDP_FAULT, parsed once; empty when unset.
  static const FaultPlan& from_environment();
  /// Everything planned for `rank` at collective number `op` (all defaults when nothing is).
  FaultAction action(int rank, uint64_t op) const;
  bool empty() const { return faults_.empty(); }
  /// Throws when a fault names a rank this job of `size` ranks does not have.
  void check_ranks(int size) const;

 private:
  std::vector<Fault> faults_;
};

}  // namespace ringdp::comm

// How a polling wait spends the time between its polls (issue #47 item 6: a rank waiting 3 s for
// a late peer burnt 1.47 s of CPU, and beside other work its spinning took the cores its peers,
// a DataLoader's workers or a neighbour's job needed). MPI has no blocking wait that also keeps
// ringdp's deadline and watches for departure notices, and the shared-memory slots are plain
// memory, so every wait polls; this decides how often:
//  - for the first RINGDP_SPIN_US (default 50 µs) back to back, or yielding where ranks outnumber
//    cores: a small collective's wait, microseconds long, keeps its latency;
//  - then sleeping 1/32 of the time waited so far, at most 1 ms, between polls: a long wait costs
//    a few percent of a core at most, and ends at most about 3% (and 1 ms) after what it waited
//    for. Not sched_yield between them: beside a busy process it hands that process the core for
//    a whole time slice, where a sleeper that wakes takes the core back at once.
// A futex on the slots could wake the waiter exactly, but the writer would pay a system call per
// round on the fast path, and MPI's waits could not use it anyway.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

namespace ringdp::comm {

class IdleBackoff {
 public:
  /// `yield_from_start`: ranks outnumber cores, so even the first polls give the core away.
  explicit IdleBackoff(bool yield_from_start);
  /// After a poll that found nothing done. True when it slept or yielded past the spin: the
  /// caller then lets its library progress (MPI moves messages only inside its calls). Inline up
  /// to the first clock read: a small collective's wait ends within those polls.
  bool pause() {
    if (++polls_ < kUncountedPolls) {
      if (yield_) std::this_thread::yield();
      return false;
    }
    return pause_timed();
  }

 private:
  using Clock = std::chrono::steady_clock;
  // The polls before the clock is first read (about 20 ns a read): the old waits' own rhythm,
  // which read it every 256th poll.
  static constexpr uint32_t kUncountedPolls = 256;
  bool pause_timed();
  bool yield_;
  uint32_t polls_ = 0;
  Clock::time_point start_{};
};

/// RINGDP_SPIN_US, read once: how long a wait polls back to back before it yields and sleeps.
std::chrono::microseconds spin_time();

}  // namespace ringdp::comm

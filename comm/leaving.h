// Why a process leaves the job, as its communicators tell their peers (Communicator::leave,
// comm/world/departures.h), and whether it may wait for them on the way out.
#pragma once

#include <chrono>
#include <string>

namespace ringdp::comm {

struct Leaving {
  std::string why;
  /// After a failure (an exception Python did not catch): the communicators free their shared
  /// windows alone, and wait for their peers' notices only until `grace_until` (where MPI_Finalize
  /// would wait for them): another library may keep those peers blocked for as long as this
  /// process lives (a gloo group beside ringdp's never sees a live peer's sockets close).
  bool failed = false;
  std::chrono::steady_clock::time_point grace_until{};
  /// Only tell the peers (leave_job's first round for a failure, so that no communicator's wait
  /// holds back another's notice); the communicator leaves at its next leave().
  bool announce_only = false;
};

}  // namespace ringdp::comm

// Why a process leaves the job, as its communicators tell their peers (Communicator::leave,
// comm/world/departures.h), and whether it may wait for them on the way out.
#pragma once

#include <string>

namespace ringdp::comm {

struct Leaving {
  std::string why;
  /// After a failure (an exception Python did not catch): the communicators leave without waiting
  /// for their peers' notices. Another library may keep those peers blocked for as long as this
  /// process lives (a gloo group beside ringdp's never sees a live peer's sockets close).
  bool failed = false;
};

}  // namespace ringdp::comm

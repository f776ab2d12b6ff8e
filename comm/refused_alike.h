// RefusedAlike: a collective that every rank refused alike, at the same point and before any data
// moved, so that the ranks are still in step and the communicator goes on (the shared-memory
// paths, where every rank reads every rank's announcement: shared tensors on some ranks only,
// another place, another count). Any other error in a collective leaves the ranks out of step
// (one rank of a ring finds a count that differs while the others wait on it): the communicator
// is then broken and its peers are told (comm/execution/execution.cpp, comm/world/departures.h).
#pragma once

#include <string>

#include "core/error.h"

namespace ringdp::comm {

class RefusedAlike : public Error {
 public:
  using Error::Error;
};

/// Runs `checks`, turning the Error one throws into a RefusedAlike: for checks that every rank
/// makes of every rank's announcement.
template <typename F>
void refused_alike(F&& checks) {
  try {
    checks();
  } catch (const RefusedAlike&) {
    throw;
  } catch (const Error& e) {
    throw RefusedAlike(e.what());
  }
}

}  // namespace ringdp::comm

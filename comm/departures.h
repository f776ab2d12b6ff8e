// Departures: how the ranks of one communicator learn that one of them has left, so that a rank
// that fails (an exception, sys.exit, a C++ main that returns 1) ends its peers' waits within
// seconds instead of at the collective timeout, and nothing collective runs at teardown while a
// peer may be gone.
//
// Leaving tells every peer why (the exception's message where the process knows it) and how many
// collectives this rank had issued. A peer's wait that has gone on a while (the transports' slow
// path, every 256 polls, where the deadline is read) looks for such a notice and fails with
// PeerLeft, naming the rank and why. The world's communicator then waits, on leaving, for every
// peer's notice: only then are all ranks at teardown and may free the shared-memory windows
// (MPI_Win_free is collective), and only if every rank said it would (a rank unwinding towards
// MPI_Abort does not wait and says it will not). A group's leaving is local: torch drops a group at
// each rank's own time, while its peers may be inside another collective that needs this rank.
// The implementation over MPI: comm/mpi_departures.h. Tested by tests/mpi/rank_leaves.sh and
// tests/torch/test_leave.sh.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "comm/transport.h"
#include "core/error.h"

namespace ringdp::comm {

/// A peer has left the communicator while this rank waited for it.
class PeerLeft : public Error {
 public:
  using Error::Error;
};

class Departures : public WaitWatch {
 public:
  /// Tells every peer this rank leaves (`why`, `issued` collectives), once. The world's
  /// communicator then waits up to `limit` for every peer's notice, ending the job past it and
  /// naming the ranks that did not come; `unwinding` (an exception on its way to MPI_Abort) waits
  /// for none. Returns whether the shared windows may be freed: every rank waited and said so.
  virtual bool leave(const std::string& why, uint64_t issued, bool unwinding,
                     std::chrono::milliseconds limit) = 0;
};

}  // namespace ringdp::comm

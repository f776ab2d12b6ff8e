// Departures: how the ranks of one communicator learn that one of them has left, so that a rank
// that fails (an exception, sys.exit, a C++ main that returns 1) ends its peers' waits within
// seconds instead of at the collective timeout, and nothing collective runs at teardown while a
// peer may be gone.
//
// Leaving tells every peer why (the exception's message where the process knows it) and how many
// collectives this rank finished before it left or before its first failure. A peer's collective
// wait that has gone on a while (the transports' slow path, every 256 polls, where the deadline is
// read) looks for such notices, and fails with PeerLeft, naming the rank and why, when a rank that
// left had not finished the collective being waited for: it never will. A rank that finished it
// is not blamed: its messages are on their way. Only a communicator with shared-memory windows
// (the world's, on one host) that leaves before its process ends waits on leaving for every
// peer's notice (a Python process's exit hook leaves the windows to MPI_Finalize): only then are all ranks at
// teardown, so freeing the windows (MPI_Win_free, collective) meets no rank still inside a
// collective, and only if every rank said it would (a rank unwinding towards MPI_Abort says it
// will not). Any other leaving is local: torch drops a group at each rank's own time, while its
// peers may be inside another collective that needs this rank. Not watched: send/recv (some
// ranks only), MPI's own collectives (they block inside MPI). The implementation over MPI:
// comm/world/mpi_departures.h. Tested by tests/mpi/rank_leaves.sh and tests/torch/test_leave.sh.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "comm/position.h"
#include "comm/transport/transport.h"
#include "core/error.h"

namespace ringdp::comm {

/// A peer has left the communicator, or failed in the collective, while this rank waited for it.
class PeerLeft : public Error {
 public:
  using Error::Error;
};

class Departures : public WaitWatch {
 public:
  /// Where this rank is (not owned): check() compares its collective's sequence number with what
  /// each rank that left had finished.
  void watch_position(const Position* position) { position_ = position; }
  /// Tells every peer, once, that this rank leaves: `why`, the collectives it `finished`, and
  /// whether it will free the shared windows. Never blocks.
  virtual void announce(const std::string& why, uint64_t finished, bool frees_shared) = 0;
  /// Tells every peer, once, that this rank's collective number `finished` failed here (`why`:
  /// a count that differs, a timeout under torch): its peers may wait in that collective for
  /// messages that will never come, so they fail too, naming this rank, instead of waiting for
  /// the timeout. Counts as this rank's leaving: no later notice is sent, and the shared windows
  /// are not freed collectively. Never blocks.
  virtual void announce_failure(const std::string& why, uint64_t finished) = 0;
  /// Takes the notices that have arrived; true once every peer's has. Never blocks.
  virtual bool everyone_left() = 0;
  /// Once everyone_left(): whether every peer said it frees the shared windows.
  virtual bool everyone_frees_shared() const = 0;
  /// Waits until everyone_left() (true) or `until` has passed (false). A peer may take long (still
  /// computing, or inside a collective that has yet to see this rank's notice): sleeps between
  /// looks, growing to 10 ms, without `exec_lock`, so that other communicators' calls go on.
  bool await_everyone(std::unique_lock<std::mutex>& exec_lock, std::chrono::steady_clock::time_point until);
  /// The ranks whose notice has not arrived, as "1, 3".
  virtual std::string missing() const = 0;
  /// Takes no more notices (the communicator has left).
  virtual void stop_listening() = 0;
  /// False once the library the notices travel by is gone (a program that finalized MPI itself):
  /// leaving then tells nobody.
  virtual bool usable() const { return true; }

 protected:
  const Position* position_ = nullptr;
};

}  // namespace ringdp::comm

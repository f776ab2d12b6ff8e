// Why a process leaves the job, as its communicators tell their peers (Communicator::leave,
// comm/world/departures.h), and whether it may wait for them on the way out.
#pragma once

#include <string>

namespace ringdp::comm {

struct Leaving {
  std::string why;
  /// After a failure (an exception Python did not catch): the communicators free their shared
  /// windows alone, not waiting for their peers: another library may keep those peers blocked for
  /// as long as this process lives (a gloo group beside ringdp's never sees a live peer's sockets
  /// close).
  bool failed = false;
  /// The process is ending (a Python exit hook) and MPI_Finalize follows: the shared windows are
  /// left to it rather than freed with the peers, so this rank does not wait for them here. A rank
  /// that exits 0 waits for them at exit as MPI_Finalize always did; one that exits non-zero,
  /// failed whether or not an exception said so (sys.exit(1)), waits only a grace period there
  /// (comm/bootstrap/mpi_runtime.h), where its peers may be blocked in another library until its
  /// process ends (a gloo group).
  bool process_exit = false;
};

}  // namespace ringdp::comm

// Implements comm/bootstrap/open_mpi_defaults.h (the why is there).
#include "comm/bootstrap/open_mpi_defaults.h"

#include <cstdlib>

#include "config.h"

#if RINGDP_HAVE_MPI
#include <mpi.h>
#endif

namespace ringdp::comm {

void apply_open_mpi_defaults() {
#if RINGDP_HAVE_MPI && defined(OPEN_MPI)
  // Open MPI reads OMPI_MCA_* from the process's environment when MPI_Init opens its components;
  // overwrite = 0 keeps a value the user (or mpirun --mca) set.
  setenv("OMPI_MCA_btl_tcp_flags", kTcpFlags, 0);
#endif
}

}  // namespace ringdp::comm

// The space MPI's shared windows take in /dev/shm, checked before MPI is asked for them: with too
// little, MPI_Win_allocate_shared fails with "internal error" and no reason (issue #48 item 6).
#pragma once

#include <cstddef>
#include <string>

#include "config.h"

#if RINGDP_HAVE_MPI
#include <mpi.h>

namespace ringdp::comm {

/// Collective over `node` (the ranks of one host). Each rank will place `bytes_per_rank` in
/// /dev/shm; when the least space any of them sees free there is less than all of them need,
/// every rank throws the same Error, naming /dev/shm, what is free, what `what` needs, and
/// `remedy` (the setting that lowers it). Nothing is checked where /dev/shm cannot be read.
void check_shm_space(MPI_Comm node, size_t bytes_per_rank, const std::string& what,
                     const std::string& remedy);

/// "1.0 MiB (1,053,192 B)": a size a reader can compare with df's.
std::string shm_bytes_text(size_t bytes);

}  // namespace ringdp::comm

#endif

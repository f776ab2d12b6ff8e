// The space shared memory takes in /dev/shm (MPI's shared windows; the segments of a job without MPI,
// comm/transport/shm/shm_segment.h), checked before it is asked for: with too little,
// MPI_Win_allocate_shared fails with "internal error" and no reason (issue #48 item 6).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "config.h"

#if RINGDP_HAVE_MPI
#include <mpi.h>
#endif

namespace ringdp::comm {

/// The bytes free in /dev/shm, or UINT64_MAX where that cannot be read or Open MPI was told to put
/// its windows elsewhere.
uint64_t shm_free_bytes();
/// With `available` bytes free in /dev/shm, the Error's text when `ranks` ranks each placing
/// `bytes_per_rank` there would not fit (naming /dev/shm, what is free, what `what` needs, and
/// `remedy`), or "".
std::string shm_space_problem(uint64_t available, int ranks, size_t bytes_per_rank, const std::string& what,
                              const std::string& remedy);

#if RINGDP_HAVE_MPI

/// Collective over `node` (the ranks of one host). Each rank will place `bytes_per_rank` in
/// /dev/shm; when the least space any of them sees free there is less than all of them need,
/// every rank throws the same Error, naming /dev/shm, what is free, what `what` needs, and
/// `remedy` (the setting that lowers it). Nothing is checked where /dev/shm cannot be read.
void check_shm_space(MPI_Comm node, size_t bytes_per_rank, const std::string& what,
                     const std::string& remedy);
#endif

/// "1.0 MiB (1,053,192 B)": a size a reader can compare with df's.
std::string shm_bytes_text(size_t bytes);

}  // namespace ringdp::comm

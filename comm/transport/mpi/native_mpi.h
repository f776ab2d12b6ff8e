// The MPI library's own collectives (MPI_Allreduce, MPI_Reduce, ...): the baseline our
// algorithms are measured against (`--algo native`), never used by them. bfloat16, which MPI
// has no type for, travels as 16-bit words reduced by user-defined MPI_Ops.
#pragma once

#include "config.h"
#include "core/dtype.h"
#include "core/reduce_op.h"

#if RINGDP_HAVE_MPI
#include <mpi.h>

#include "comm/transport/transport.h"

namespace ringdp::comm::native {

// Buffers may alias (in place); avg is reduced as sum and divided by the caller.
void all_reduce(MPI_Comm comm, const void* input, void* out, int64_t count, DType dtype, ReduceOp op);
void reduce(MPI_Comm comm, const void* input, void* out, int64_t count, DType dtype, ReduceOp op, int root);
void broadcast(MPI_Comm comm, void* buf, int64_t count, DType dtype, int root);
void all_gather(MPI_Comm comm, const void* input, void* out, int64_t chunk_count, DType dtype);
void reduce_scatter(MPI_Comm comm, const void* input, void* out, int64_t chunk_count, DType dtype,
                    ReduceOp op);
void barrier(MPI_Comm comm);
/// MPI_Gather, MPI_Scatter, MPI_Alltoall (even blocks) or their v-forms, and MPI_Allgatherv.
/// MPI counts and displacements are int: one above INT_MAX is an Error naming it.
void exchange(MPI_Comm comm, const BlockExchange& e);

}  // namespace ringdp::comm::native
#endif

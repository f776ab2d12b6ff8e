// NCCL's own collectives (ncclAllReduce, ...): the baseline for CUDA tensors, as native_mpi.h is
// for host tensors. avg arrives as sum; the communicator divides.
#pragma once

#include "config.h"
#include "kernels/dtype.h"
#include "kernels/reduce_op.h"

#if RINGDP_HAVE_NCCL || defined(RINGDP_NCCL_EMULATOR)  // the emulator: testing/nccl
#include <cuda_runtime.h>
#include <nccl.h>

namespace ringdp::comm::native_nccl {

void all_reduce(ncclComm_t comm, cudaStream_t stream, const void* input, void* out, int64_t count,
                DType dtype, ReduceOp op);
void reduce(ncclComm_t comm, cudaStream_t stream, const void* input, void* out, int64_t count, DType dtype,
            ReduceOp op, int root);
void broadcast(ncclComm_t comm, cudaStream_t stream, void* buf, int64_t count, DType dtype, int root);
void all_gather(ncclComm_t comm, cudaStream_t stream, const void* input, void* out, int64_t chunk_count,
                DType dtype);
void reduce_scatter(ncclComm_t comm, cudaStream_t stream, const void* input, void* out, int64_t chunk_count,
                    DType dtype, ReduceOp op);

}  // namespace ringdp::comm::native_nccl
#endif

// NCCL's own collectives (ncclAllReduce, ...): the baseline for CUDA tensors, as native_mpi.h is
// for host tensors. avg arrives as sum; the communicator divides.
#pragma once

#include "comm/transport/transport.h"
#include "config.h"
#include "core/dtype.h"
#include "core/reduce_op.h"

#if RINGDP_HAVE_NCCL || defined(RINGDP_NCCL_EMULATOR)  // the emulator: tests/doubles/nccl
#include <cuda_runtime.h>
#include <nccl.h>

// Each call goes on the endpoint's stream and is settled there (nccl_transport.h: the
// communicator is non-blocking).
namespace ringdp::comm::native_nccl {

/// What NCCL's own collectives need of a transport, and no more: its communicator and stream, this
/// rank and the world's size, and how to complete a call that may return ncclInProgress (under the
/// transport's deadline: NcclTransport::settle).
struct Endpoint {
  ncclComm_t comm;
  cudaStream_t stream;
  int rank, size;
  void* owner;
  void (*settle)(void* owner, ncclResult_t result, const char* call, const char* file, int line);
};

void all_reduce(const Endpoint& at, const void* input, void* out, int64_t count, DType dtype, ReduceOp op);
void reduce(const Endpoint& at, const void* input, void* out, int64_t count, DType dtype, ReduceOp op,
            int root);
void broadcast(const Endpoint& at, void* buf, int64_t count, DType dtype, int root);
void all_gather(const Endpoint& at, const void* input, void* out, int64_t chunk_count, DType dtype);
void reduce_scatter(const Endpoint& at, const void* input, void* out, int64_t chunk_count, DType dtype,
                    ReduceOp op);
/// NCCL has no gather, scatter or all-to-all call: they are its sends and receives in one group
/// (ncclGroupStart/End), as nccl-tests' alltoall_perf does. Zero-length blocks are not posted; a
/// block already in place is not sent to this rank itself.
void exchange(const Endpoint& at, const BlockExchange& e);

}  // namespace ringdp::comm::native_nccl
#endif

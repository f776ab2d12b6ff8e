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

namespace ringdp::comm {
class NcclTransport;
}

// Each call goes on the transport's stream and is settled there (nccl_transport.h: the
// communicator is non-blocking).
namespace ringdp::comm::native_nccl {

void all_reduce(NcclTransport& t, const void* input, void* out, int64_t count, DType dtype, ReduceOp op);
void reduce(NcclTransport& t, const void* input, void* out, int64_t count, DType dtype, ReduceOp op,
            int root);
void broadcast(NcclTransport& t, void* buf, int64_t count, DType dtype, int root);
void all_gather(NcclTransport& t, const void* input, void* out, int64_t chunk_count, DType dtype);
void reduce_scatter(NcclTransport& t, const void* input, void* out, int64_t chunk_count, DType dtype,
                    ReduceOp op);
/// NCCL has no gather, scatter or all-to-all call: they are its sends and receives in one group
/// (ncclGroupStart/End), as nccl-tests' alltoall_perf does. Zero-length blocks are not posted; a
/// block already in place is not sent to this rank itself.
void exchange(NcclTransport& t, const BlockExchange& e);

}  // namespace ringdp::comm::native_nccl
#endif

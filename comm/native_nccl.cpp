// Implements comm/native_nccl.h (the contract is documented there). Tested by
// tests/mpi/test_mpi_device_transports.cpp (NCCL stand-in) and tests/cuda/test_nccl_local.cpp (on a GPU).
#include "comm/native_nccl.h"

#if RINGDP_HAVE_NCCL || defined(RINGDP_NCCL_EMULATOR)  // the emulator: testing/nccl
#include "comm/nccl_transport.h"

namespace ringdp::comm::native_nccl {
namespace {
ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::float32: return ncclFloat32;
    case DType::float64: return ncclFloat64;
    case DType::int32: return ncclInt32;
    case DType::int64: return ncclInt64;
    case DType::bfloat16: return ncclBfloat16;
  }
  return ncclFloat32;
}
ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::max: return ncclMax;
    default: return ncclSum;
  }
}
}  // namespace

void all_reduce(ncclComm_t comm, cudaStream_t stream, const void* input, void* out, int64_t count,
                DType dtype, ReduceOp op) {
  NCCL_CHECK(ncclAllReduce(input, out, count, nccl_type(dtype), nccl_op(op), comm, stream));
}
void reduce(ncclComm_t comm, cudaStream_t stream, const void* input, void* out, int64_t count, DType dtype,
            ReduceOp op, int root) {
  NCCL_CHECK(ncclReduce(input, out, count, nccl_type(dtype), nccl_op(op), root, comm, stream));
}
void broadcast(ncclComm_t comm, cudaStream_t stream, void* buf, int64_t count, DType dtype, int root) {
  NCCL_CHECK(ncclBroadcast(buf, buf, count, nccl_type(dtype), root, comm, stream));
}
void all_gather(ncclComm_t comm, cudaStream_t stream, const void* input, void* out, int64_t chunk_count,
                DType dtype) {
  NCCL_CHECK(ncclAllGather(input, out, chunk_count, nccl_type(dtype), comm, stream));
}
void reduce_scatter(ncclComm_t comm, cudaStream_t stream, const void* input, void* out, int64_t chunk_count,
                    DType dtype, ReduceOp op) {
  NCCL_CHECK(ncclReduceScatter(input, out, chunk_count, nccl_type(dtype), nccl_op(op), comm, stream));
}

}  // namespace ringdp::comm::native_nccl
#endif

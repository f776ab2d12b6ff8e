// Implements comm/transport/cuda/native_nccl.h (the contract is documented there). Tested by
// tests/mpi/test_mpi_device_transports.cpp (NCCL stand-in) and tests/cuda/test_nccl_local.cpp (on a GPU).
#include "comm/transport/cuda/native_nccl.h"

#if RINGDP_HAVE_NCCL || defined(RINGDP_NCCL_EMULATOR)  // the emulator: tests/doubles/nccl
#include "comm/transport/cuda/nccl_transport.h"  // RINGDP_NCCL_CHECK

// A call that may return ncclInProgress, completed by the endpoint's transport.
#define SETTLE(at, call) (at).settle((at).owner, (call), #call, __FILE__, __LINE__)

namespace ringdp::comm::native_nccl {
namespace {
ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::float32: return ncclFloat32;
    case DType::float64: return ncclFloat64;
    case DType::int32: return ncclInt32;
    case DType::int64: return ncclInt64;
    case DType::bfloat16: return ncclBfloat16;
    case DType::float16: return ncclFloat16;
    case DType::int8: return ncclInt8;
    case DType::uint8: return ncclUint8;
    case DType::boolean: return ncclUint8;  // 0 or 1 per byte; nccl_op maps the ops
  }
  return ncclFloat32;
}
ncclRedOp_t nccl_op(ReduceOp op, DType dtype) {
  // bool rides as bytes of 0 or 1: "any" is max and "all" is min (kernels/reduce_into.h).
  if (dtype == DType::boolean && op == ReduceOp::sum) return ncclMax;
  if (dtype == DType::boolean && op == ReduceOp::prod) return ncclMin;
  switch (op) {
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::band:
    case ReduceOp::bor:
    case ReduceOp::bxor:
      RINGDP_FAIL("NCCL has no bitwise reduction (", reduce_op_name(op), "): use ringdp's own algorithms");
    default: return ncclSum;
  }
}
}  // namespace

void all_reduce(const Endpoint& at, const void* input, void* out, int64_t count, DType dtype, ReduceOp op) {
  SETTLE(at, ncclAllReduce(input, out, count, nccl_type(dtype), nccl_op(op, dtype), at.comm, at.stream));
}
void reduce(const Endpoint& at, const void* input, void* out, int64_t count, DType dtype, ReduceOp op,
            int root) {
  SETTLE(at, ncclReduce(input, out, count, nccl_type(dtype), nccl_op(op, dtype), root, at.comm, at.stream));
}
void broadcast(const Endpoint& at, void* buf, int64_t count, DType dtype, int root) {
  SETTLE(at, ncclBroadcast(buf, buf, count, nccl_type(dtype), root, at.comm, at.stream));
}
void all_gather(const Endpoint& at, const void* input, void* out, int64_t chunk_count, DType dtype) {
  SETTLE(at, ncclAllGather(input, out, chunk_count, nccl_type(dtype), at.comm, at.stream));
}
void reduce_scatter(const Endpoint& at, const void* input, void* out, int64_t chunk_count, DType dtype,
                    ReduceOp op) {
  SETTLE(at, ncclReduceScatter(input, out, chunk_count, nccl_type(dtype), nccl_op(op, dtype), at.comm,
                               at.stream));
}

void exchange(const Endpoint& at, const BlockExchange& e) {
  const int N = at.size, r = at.rank;
  const size_t eb = dtype_size(e.dtype);
  const ncclDataType_t type = nccl_type(e.dtype);
  const auto* in = static_cast<const char*>(e.input);
  auto* out = static_cast<char*>(e.output);
  using enum BlockExchange::Pattern;
  // What each pattern sends from this rank and receives here (BlockExchange's comment).
  const bool sends = e.pattern != scatter || r == e.root;
  const bool receives = e.pattern != gather || r == e.root;
  auto send_count = [&](int j) { return e.pattern == all_gather ? e.send_counts[r] : e.send_counts[j]; };
  auto send_at = [&](int j) { return e.pattern == all_gather ? in : in + e.send_offsets[j] * eb; };
  // A rank that receives nothing (gather off the root) may have no output at all.
  const bool own_in_place = out && send_at(r) == out + e.recv_offsets[r] * eb;
  RINGDP_NCCL_CHECK(ncclGroupStart());
  for (int j = 0; j < N; ++j) {
    if (j == r && own_in_place) continue;
    if (sends && send_count(j) > 0 && (e.pattern != gather || j == e.root))
      RINGDP_NCCL_CHECK(ncclSend(send_at(j), send_count(j), type, j, at.comm, at.stream));
    if (receives && e.recv_counts[j] > 0 && (e.pattern != scatter || j == e.root))
      RINGDP_NCCL_CHECK(
          ncclRecv(out + e.recv_offsets[j] * eb, e.recv_counts[j], type, j, at.comm, at.stream));
  }
  SETTLE(at, ncclGroupEnd());
}

}  // namespace ringdp::comm::native_nccl
#endif

// Implements comm/transport/transport.h (the contract is documented there). Tested by tests/mpi/.
#include "comm/transport/transport.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <exception>
#include <new>

#include "core/error.h"

namespace ringdp::comm {

// Bit 6 of byte 0: a low mantissa bit of a little-endian float32 (2^-17 relative), small enough to
// pass a tolerance, so only the exact checks of verifiable inputs see it.
void Transport::corrupt_byte(void* p) { *static_cast<unsigned char*>(p) ^= 0x40; }

void* Transport::scratch(int slot, size_t bytes) {
  if (scratch_.size() <= static_cast<size_t>(slot)) scratch_.resize(slot + 1);
  Scratch& s = scratch_[slot];
  if (!s.buffer || s.bytes < bytes) {
    s.buffer = allocate(std::max<size_t>(bytes, 1));
    s.bytes = bytes;
  }
  return s.buffer.get();
}

Transport::Buffer Transport::allocate(size_t bytes) {
  return Buffer(::operator new (bytes, std::align_val_t{64}),
                [](void* p) { ::operator delete (p, std::align_val_t{64}); });
}

void Transport::native_all_reduce(const void*, void*, int64_t, DType, ReduceOp) {
  RINGDP_FAIL("this transport has no library collectives of its own (--algo native)");
}
void Transport::native_reduce(const void*, void*, int64_t, DType, ReduceOp, int) {
  RINGDP_FAIL("this transport has no library collectives of its own (--algo native)");
}
void Transport::native_broadcast(void*, int64_t, DType, int) {
  RINGDP_FAIL("this transport has no library collectives of its own (--algo native)");
}
void Transport::native_all_gather(const void*, void*, int64_t, DType) {
  RINGDP_FAIL("this transport has no library collectives of its own (--algo native)");
}
void Transport::native_reduce_scatter(const void*, void*, int64_t, DType, ReduceOp) {
  RINGDP_FAIL("this transport has no library collectives of its own (--algo native)");
}
void Transport::native_barrier() {
  RINGDP_FAIL("this transport has no library collectives of its own (--algo native)");
}
void Transport::native_exchange(const BlockExchange&) {
  RINGDP_FAIL("this transport has no library collectives of its own (--algo native)");
}

void Transport::end_collective(const std::string&, std::chrono::milliseconds, bool, void*) {}

int Transport::tag_upper_bound() const { return INT_MAX; }

void Transport::bootstrap_broadcast(void*, size_t) {
  RINGDP_CHECK(size() == 1, "this transport cannot broadcast a bootstrap message to ", size(), " ranks");
}

void Transport::expire() {
  if (on_expiry_) on_expiry_();
  std::terminate();  // the handler ends the job; this is the backstop if it returned
}

Request LocalTransport::isend(int peer, const void*, size_t, int) {
  RINGDP_FAIL("send to rank ", peer, " in a world of one rank");
}

Request LocalTransport::irecv(int peer, void*, size_t, int) {
  RINGDP_FAIL("receive from rank ", peer, " in a world of one rank");
}

void LocalTransport::reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) {
  kernels::reduce_into_cpu(dst, src, count, dtype, op);
}

void LocalTransport::copy(void* dst, const void* src, size_t bytes) {
  if (bytes && dst != src) std::memmove(dst, src, bytes);
}

void LocalTransport::native_all_reduce(const void* input, void* output, int64_t count, DType dtype,
                                       ReduceOp) {
  copy(output, input, count * dtype_size(dtype));
}

void LocalTransport::native_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp,
                                   int) {
  copy(output, input, count * dtype_size(dtype));
}

void LocalTransport::native_all_gather(const void* input, void* output, int64_t chunk_count, DType dtype) {
  copy(output, input, chunk_count * dtype_size(dtype));
}

void LocalTransport::native_reduce_scatter(const void* input, void* output, int64_t chunk_count, DType dtype,
                                           ReduceOp) {
  copy(output, input, chunk_count * dtype_size(dtype));
}

// Every pattern on one rank is the rank's own block, copied.
void LocalTransport::native_exchange(const BlockExchange& e) {
  const size_t eb = dtype_size(e.dtype);
  copy(static_cast<char*>(e.output) + e.recv_offsets[0] * eb,
       static_cast<const char*>(e.input) + e.send_offsets[0] * eb, e.recv_counts[0] * eb);
}

}  // namespace ringdp::comm

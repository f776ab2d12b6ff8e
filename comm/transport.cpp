// Implements comm/transport.h (the contract is documented there). Tested by tests/mpi/.
#include "comm/transport.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <exception>

#include "kernels/error.h"

namespace ringdp::comm {

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
  return Buffer(::operator new(bytes, std::align_val_t{64}),
                [](void* p) { ::operator delete(p, std::align_val_t{64}); });
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

}  // namespace ringdp::comm

// Implements comm/transport.h (the contract is documented there). Tested by tests/mpi/.
#include "comm/transport.h"

#include <cstring>
#include <exception>

#include "kernels/error.h"

namespace ringdp::comm {

void* Transport::scratch(int slot, size_t bytes) {
  if (scratch_.size() <= static_cast<size_t>(slot)) scratch_.resize(slot + 1);
  auto& buffer = scratch_[slot];
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer.data();
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

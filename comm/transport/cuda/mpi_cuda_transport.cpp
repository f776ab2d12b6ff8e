// Implements comm/transport/cuda/mpi_cuda_transport.h (the contract is documented there). Tested by
// tests/mpi/test_mpi_device_transports.cpp (under mpirun, on the CPU emulator's asynchronous streams)
// and tests/gpu/device_check.sh (the mpi suite on CUDA tensors, on a GPU).
#include "comm/transport/cuda/mpi_cuda_transport.h"

#if RINGDP_HAVE_CUDA || defined(RINGDP_CUDA_EMULATOR)
#include <cstdlib>
#include <cstring>
#include <thread>

#include "comm/transport/idle_backoff.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/reduce_into.h"

namespace ringdp::comm {

const char* path_name(MpiCudaTransport::Path path) {
  return path == MpiCudaTransport::Path::cuda_aware ? "CUDA-aware MPI" : "staged through pinned host memory";
}

MpiCudaTransport::MpiCudaTransport(Transport& host, int device, Path path, Window window)
    : CudaStreamTransport(device, "CUDA tensors over MPI"), host_(host), path_(path), window_(window) {
  RINGDP_CHECK(window.bytes > 0 && window.messages > 0, "MpiCudaTransport: empty staging window");
}

MpiCudaTransport::~MpiCudaTransport() {
  stop_watchdog();
  if (stream_) cudaStreamSynchronize(stream_);
  for (Pinned& p : pinned_) cudaFreeHost(p.data);
}

size_t MpiCudaTransport::pinned_bytes() const {
  size_t total = 0;
  for (const Pinned& p : pinned_) total += p.bytes;
  return total;
}

int MpiCudaTransport::acquire_pinned(size_t bytes) {
  int best = -1;
  for (size_t i = 0; i < pinned_.size(); ++i) {
    const Pinned& p = pinned_[i];
    if (!p.busy && p.bytes >= bytes && (best < 0 || p.bytes < pinned_[static_cast<size_t>(best)].bytes))
      best = static_cast<int>(i);
  }
  if (best < 0) {
    // Powers of two from 4 KiB: a buffer serves every later message of its size class.
    Pinned p;
    p.bytes = 4096;
    while (p.bytes < bytes) p.bytes *= 2;
    RINGDP_CUDA_CHECK(cudaMallocHost(&p.data, p.bytes));
    pinned_.push_back(p);
    best = static_cast<int>(pinned_.size()) - 1;
  }
  pinned_[static_cast<size_t>(best)].busy = true;
  return best;
}

void MpiCudaTransport::release_pinned(Message& m, size_t& in_flight_bytes, int& in_flight) {
  if (m.pinned < 0) return;
  pinned_[static_cast<size_t>(m.pinned)].busy = false;
  m.pinned = -1;
  in_flight_bytes -= m.bytes;
  --in_flight;
}

size_t MpiCudaTransport::post(const Message& m) {
  size_t slot;
  if (!free_slots_.empty()) {
    slot = static_cast<size_t>(free_slots_.back());
    free_slots_.pop_back();
    messages_[slot] = m;
  } else {
    slot = messages_.size();
    messages_.push_back(m);
  }
  return slot;
}

MpiCudaTransport::Message& MpiCudaTransport::message_of(const Request& r) {
  RINGDP_CHECK(
      r.handle >= 1 && r.handle <= messages_.size() && messages_[r.handle - 1].state != Message::State::idle,
      "MpiCudaTransport: request ", r.handle, " is not in flight");
  return messages_[r.handle - 1];
}

Request MpiCudaTransport::isend(int peer, const void* data, size_t bytes, int tag) {
  return start(false, peer, const_cast<void*>(data), bytes, tag);
}

Request MpiCudaTransport::irecv(int peer, void* data, size_t bytes, int tag) {
  return start(true, peer, data, bytes, tag);
}

Request MpiCudaTransport::start(bool receive, int peer, void* data, size_t bytes, int tag) {
  Message m;
  m.device = data;
  m.bytes = bytes;
  m.peer = peer;
  m.tag = tag;
  if (path_ == Path::cuda_aware) {
    // MPI touches device memory outside stream order: a send must not read what a queued kernel
    // is still writing, a receive must not overwrite what a queued kernel is still reading.
    if (bytes > 0) synchronize();
    m.host = receive ? host_.irecv(peer, data, bytes, tag) : host_.isend(peer, data, bytes, tag);
    m.state = receive ? Message::State::receiving : Message::State::sending;
  } else {
    m.state = Message::State::queued;
  }
  const size_t slot = post(m);
  if (m.state == Message::State::queued) {
    // Even an empty message (the barrier's) queues behind earlier ones, to keep their order.
    (receive ? queued_receives_ : queued_sends_).push_back(slot);
    issue();  // starts the copy (or posts the receive) now if the window has room
  }
  return Request{slot + 1, peer, tag, bytes, receive};
}

namespace {
bool fired(cudaEvent_t e) {
  const cudaError_t state = cudaEventQuery(e);
  if (state == cudaErrorNotReady) return false;
  RINGDP_CUDA_CHECK(state);
  return true;
}
}  // namespace

void MpiCudaTransport::advance(Message& m) {
  using S = Message::State;
  if (m.state == S::sending && host_.test(m.host)) {
    release_pinned(m, sending_bytes_, sending_);  // MPI is done with the pinned copy
    m.state = S::done;
  }
  if (m.state == S::receiving && host_.test(m.host)) {
    if (m.pinned < 0) {
      m.state = S::done;  // CUDA-aware, or zero bytes: nothing to copy
    } else {
      // Enqueued at once, while the ring's other segments are still on the wire.
      RINGDP_CUDA_CHECK(cudaMemcpyAsync(m.device, pinned_[static_cast<size_t>(m.pinned)].data, m.bytes,
                                        cudaMemcpyHostToDevice, stream_));
      m.event = acquire_event();
      RINGDP_CUDA_CHECK(cudaEventRecord(m.event, stream_));
      m.state = S::copy_in;
    }
  }
  if (m.state == S::copy_in && fired(m.event)) {
    release_pinned(m, receiving_bytes_, receiving_);
    m.state = S::done;
  }
}

void MpiCudaTransport::issue() {
  using S = Message::State;
  // Messages are issued in the order they were posted, never as their copies happen to finish:
  // a collective's receives take any tag, so MPI's in-order matching is what puts segment k into
  // receive k. At most one window of each direction is staged at once (always at least one
  // message), which bounds the pinned memory whatever the tensor's size.
  auto fits = [this](size_t in_flight_bytes, int in_flight, size_t bytes) {
    return bytes == 0 || in_flight == 0 ||
           (in_flight < window_.messages && in_flight_bytes + bytes <= window_.bytes);
  };
  while (!queued_sends_.empty()) {
    Message& m = messages_[queued_sends_.front()];
    if (!fits(sending_bytes_, sending_, m.bytes)) break;
    if (m.bytes > 0) {
      m.pinned = acquire_pinned(m.bytes);
      sending_bytes_ += m.bytes;
      ++sending_;
      RINGDP_CUDA_CHECK(cudaMemcpyAsync(pinned_[static_cast<size_t>(m.pinned)].data, m.device, m.bytes,
                                        cudaMemcpyDeviceToHost, stream_));
    }
    m.event = acquire_event();
    RINGDP_CUDA_CHECK(cudaEventRecord(m.event, stream_));
    m.state = S::copy_out;
    copying_sends_.push_back(queued_sends_.front());
    queued_sends_.pop_front();
  }
  while (!copying_sends_.empty()) {
    Message& m = messages_[copying_sends_.front()];
    if (!fired(m.event)) break;
    m.host = host_.isend(m.peer, m.pinned >= 0 ? pinned_[static_cast<size_t>(m.pinned)].data : nullptr,
                         m.bytes, m.tag);
    m.state = S::sending;
    copying_sends_.pop_front();
  }
  while (!queued_receives_.empty()) {
    Message& m = messages_[queued_receives_.front()];
    if (!fits(receiving_bytes_, receiving_, m.bytes)) break;
    void* landing = nullptr;
    if (m.bytes > 0) {
      m.pinned = acquire_pinned(m.bytes);
      receiving_bytes_ += m.bytes;
      ++receiving_;
      landing = pinned_[static_cast<size_t>(m.pinned)].data;
    }
    m.host = host_.irecv(m.peer, landing, m.bytes, m.tag);
    m.state = S::receiving;
    queued_receives_.pop_front();
  }
}

void MpiCudaTransport::progress() {
  using S = Message::State;
  issue();
  for (Message& m : messages_) {
    if (m.state == S::sending || m.state == S::receiving || m.state == S::copy_in) advance(m);
  }
}

void MpiCudaTransport::finish(Message& m) {
  if (m.event) release_event(m.event);
  m = Message{};
  free_slots_.push_back(static_cast<int>(&m - messages_.data()));
}

void MpiCudaTransport::wait_all(std::span<Request> requests) {
  bool late = false;  // the deadline passed; one more poll decides (Transport::poll_until says why)
  IdleBackoff backoff(host_.yields_when_idle());  // the peer may need this core
  for (uint32_t polls = 0;; ++polls) {
    progress();
    bool all = true;
    for (const Request& r : requests)
      all = all && (r.handle == 0 || message_of(r).state == Message::State::done);
    if (all) break;
    if (late) expire();
    const bool slept = backoff.pause();
    if (slept || (polls & 255u) == 255u) late = deadline_passed();
  }
  for (Request& r : requests) {
    if (r.handle == 0) continue;
    finish(message_of(r));
    r.handle = 0;
  }
}

bool MpiCudaTransport::test(Request& request) {
  if (request.handle == 0) return true;
  progress();
  Message& m = message_of(request);
  if (m.state != Message::State::done) return false;
  finish(m);
  request.handle = 0;
  return true;
}

void MpiCudaTransport::reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) {
  kernels::reduce_into_cuda(dst, src, count, dtype, op, stream_);
}

void MpiCudaTransport::copy(void* dst, const void* src, size_t bytes) {
  if (bytes && dst != src)
    RINGDP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void MpiCudaTransport::native_all_reduce(const void* input, void* output, int64_t count, DType dtype,
                                         ReduceOp op) {
  synchronize();
  host_.native_all_reduce(input, output, count, dtype, op);
}

void MpiCudaTransport::native_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                                     int root) {
  synchronize();
  host_.native_reduce(input, output, count, dtype, op, root);
}

void MpiCudaTransport::native_broadcast(void* buffer, int64_t count, DType dtype, int root) {
  synchronize();
  host_.native_broadcast(buffer, count, dtype, root);
}

void MpiCudaTransport::native_all_gather(const void* input, void* output, int64_t chunk_count, DType dtype) {
  synchronize();
  host_.native_all_gather(input, output, chunk_count, dtype);
}

void MpiCudaTransport::native_reduce_scatter(const void* input, void* output, int64_t chunk_count,
                                             DType dtype, ReduceOp op) {
  // In place, MPI would get overlapping buffers (see MpiTransport::native_reduce_scatter): the
  // input is copied first, on the device.
  const size_t total = static_cast<size_t>(chunk_count) * size() * dtype_size(dtype);
  const auto* in = static_cast<const char*>(input);
  const auto* out = static_cast<const char*>(output);
  if (total > 0 && out >= in && out < in + total) {
    void* whole = scratch(2, total);
    copy(whole, input, total);
    input = whole;
  }
  synchronize();
  host_.native_reduce_scatter(input, output, chunk_count, dtype, op);
}

void MpiCudaTransport::native_exchange(const BlockExchange& exchange) {
  synchronize();
  host_.native_exchange(exchange);
}

}  // namespace ringdp::comm
#endif

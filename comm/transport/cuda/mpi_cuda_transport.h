// CUDA tensors over the MPI transport: the fallback when NCCL is not built in, not wanted
// (--backend mpi), or not possible (several ranks on one GPU, which NCCL before 2.30 refuses).
// The algorithms in comm/ run on device pointers, unchanged; this transport moves their messages
// one of two ways:
//   cuda_aware  MPI reads and writes device memory itself (MPIX_Query_cuda_support() says so,
//               or RINGDP_MPI_CUDA_AWARE=1): a send waits for the stream, then MPI takes the
//               device pointer;
//   staged      every message goes through a pinned host buffer of its own. A send enqueues the
//               device-to-host copy and posts MPI_Isend when the copy's event has fired; a receive
//               lands in pinned memory and enqueues the host-to-device copy the moment it arrives.
//               Each wait drives every outstanding message, so the copy of one segment overlaps
//               the transfer of the next (the ring posts its segments together). A window (bytes
//               and messages per direction) bounds what is staged at once; the rest waits its
//               turn, in order, so pinned memory does not grow with the tensor.
// Reductions and local copies are enqueued on the transport's own stream, the same stream as the
// staging copies, so stream order alone keeps a reduction after the copy that fed it.
// The inner transport is the communicator's host transport (MPI, or a world of one).
#pragma once

#include "comm/transport/cuda/cuda_stream_transport.h"
#include "comm/transport/transport.h"
#include "config.h"

#if RINGDP_HAVE_CUDA || defined(RINGDP_CUDA_EMULATOR)
#include <cuda_runtime.h>

#include <deque>
#include <vector>

namespace ringdp::comm {

class MpiCudaTransport final : public CudaStreamTransport {
 public:
  enum class Path { cuda_aware, staged };

  struct Window {
    size_t bytes = 8u << 20;  ///< staged bytes in flight per direction (at least one message)
    int messages = 64;  ///< staged messages in flight per direction
  };
  MpiCudaTransport(Transport& host, int device, Path path, Window window);
  MpiCudaTransport(Transport& host, int device, Path path) : MpiCudaTransport(host, device, path, Window{}) {}
  ~MpiCudaTransport() override;

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  Path path() const { return path_; }

  Request isend(int peer, const void* data, size_t bytes, int tag) override;
  Request irecv(int peer, void* data, size_t bytes, int tag) override;
  void wait_all(std::span<Request> requests) override;
  bool test(Request& request) override;
  void reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) override;
  void copy(void* dst, const void* src, size_t bytes) override;

  // MPI's own collectives. CUDA-aware: on the device pointers, after the stream is done (MPI
  // reads them outside stream order). Staged: the host transport's, on host copies (native_transport).
  Transport& native_transport() override { return path_ == Path::cuda_aware ? *this : host_; }
  void native_all_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op) override;
  void native_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                     int root) override;
  void native_broadcast(void* buffer, int64_t count, DType dtype, int root) override;
  void native_all_gather(const void* input, void* output, int64_t chunk_count, DType dtype) override;
  void native_reduce_scatter(const void* input, void* output, int64_t chunk_count, DType dtype,
                             ReduceOp op) override;
  void native_exchange(const BlockExchange& exchange) override;

  /// Pinned bytes held for staging now (they are reused, never freed before the transport).
  size_t pinned_bytes() const;

 private:
  // One message. A staged send goes queued -> copy_out -> sending -> done; a staged receive
  // goes queued -> receiving -> copy_in -> done; CUDA-aware messages start at sending or
  // receiving and skip the copies. A done message keeps its slot until its own wait or test
  // collects it.
  struct Message {
    enum class State { idle, queued, copy_out, sending, receiving, copy_in, done } state = State::idle;
    Request host;  // the inner transport's request
    void* device = nullptr;
    size_t bytes = 0;
    int peer = -1, tag = 0;
    int pinned = -1;  // index into pinned_ while the message holds a staging buffer
    cudaEvent_t event = nullptr;
  };
  struct Pinned {
    void* data = nullptr;
    size_t bytes = 0;
    bool busy = false;
  };

  /// isend and irecv: queues a staged message (issued by progress) or posts a CUDA-aware one.
  Request start(bool receive, int peer, void* data, size_t bytes, int tag);
  size_t post(const Message& m);
  /// Moves a posted message (sending, receiving, copy_in) as far as it can go without blocking.
  void advance(Message& m);
  /// Issues queued messages in order as the window allows, and hands sends whose copy has
  /// finished to MPI, in order.
  void issue();
  /// issue(), then advances every message in flight: a message nobody waits for still has to
  /// progress.
  void progress();
  int acquire_pinned(size_t bytes);
  void release_pinned(Message& m, size_t& in_flight_bytes, int& in_flight);
  void finish(Message& m);
  Message& message_of(const Request& r);

  Transport& host_;
  Path path_;
  std::vector<Message> messages_;  // slot i is Request handle i + 1
  std::vector<int> free_slots_;
  std::deque<size_t> queued_sends_;  // staged sends waiting for room in the window, in order
  std::deque<size_t> copying_sends_;  // staged sends whose copy out is under way, in order
  std::deque<size_t> queued_receives_;  // staged receives waiting for room in the window, in order
  Window window_;
  size_t sending_bytes_ = 0, receiving_bytes_ = 0;  // staged bytes in flight, per direction
  int sending_ = 0, receiving_ = 0;  // staged messages in flight, per direction
  std::vector<Pinned> pinned_;
};

const char* path_name(MpiCudaTransport::Path path);

}  // namespace ringdp::comm

#endif

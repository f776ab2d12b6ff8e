// Folder comm/transport/: how bytes move between ranks. This interface and what every transport
// shares (the envelope, the idle backoff) sit here; each kind has a folder of its own: mpi/,
// cuda/ (CUDA streams, NCCL), shm/ (shared memory on one host), ucx/ (UCX). A transport knows the job's
// runtime (comm/bootstrap/) and nothing above it: no algorithm, no world, no communicator.
//
// The point-to-point interface every algorithm in comm/ is written against: post nonblocking
// sends and receives to peers, wait for a group of them, reduce and copy locally. Transports:
// MpiTransport (MPI_Isend/Irecv/Testall), UcxTransport (UCP tags), LocalTransport (a world of one), and for
// CUDA tensors NcclTransport and MpiCudaTransport (comm/transport/cuda/cuda_stream_transport.h). The
// communicator sees only this interface (as gloo's core sees only its transport): the libraries' own
// collectives (the `native` baseline) and the device-stream hooks live here too, with host defaults. Every
// wait has a deadline; passing it calls the communicator's expiry handler, which reports the Position and
// ends the job, so no wait is unbounded.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "comm/transport/idle_backoff.h"
#include "kernels/reduce_into.h"

namespace ringdp::comm {

class SharedSlots;  // comm/transport/shm/shared_slots.h

/// irecv's peer for a user message from any rank (send/recv's tags only): MPI_ANY_SOURCE. Once the
/// receive completes (test() true, or wait), the Request's peer is the rank it came from.
constexpr int kAnySource = -1;

/// What a wait that has gone on a while looks at besides its deadline: whether a peer it waits
/// for has left (comm/world/departures.h).
class WaitWatch {
 public:
  virtual ~WaitWatch() = default;
  /// Throws when the wait can no longer finish.
  virtual void check() = 0;
};

/// One posted send or receive: an opaque handle (MPI_Request underneath for MPI) and, for a
/// receive, what it expects to arrive (the envelope check in comm/transport/envelope.h).
struct Request {
  uintptr_t handle = 0;
  int peer = -1;
  int tag = 0;
  size_t bytes = 0;
  bool receive = false;
  /// A message sent in two parts, an envelope ahead of the payload (MpiTransport: larger than
  /// kDirectMaxBytes); `handle` is then the transport's record of both.
  bool two_part = false;
};

/// What the libraries' own block collectives move (Transport::native_exchange), counts and offsets
/// in elements, one entry per rank. Rank j gets send_counts[j] elements from input at
/// send_offsets[j]; recv_counts[i] elements from rank i land in output at recv_offsets[i]. Each
/// pattern reads only what its library call reads: gather's receive side and scatter's send side
/// at the root only, all_gather's send_counts[rank] (its input, sent to every rank).
struct BlockExchange {
  enum class Pattern : uint8_t { gather, scatter, all_to_all, all_gather };
  Pattern pattern;
  DType dtype;
  const void* input;
  void* output;
  std::span<const int64_t> send_counts, send_offsets, recv_counts, recv_offsets;
  int root = -1;  ///< gather and scatter
  /// Every block this many elements (the even forms: MPI_Gather, MPI_Alltoall, ...); -1: uneven,
  /// the v-forms.
  int64_t block = -1;
};

class Transport {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  virtual Request isend(int peer, const void* data, size_t bytes, int tag) = 0;
  virtual Request irecv(int peer, void* data, size_t bytes, int tag) = 0;
  /// Completes every request; calls the expiry handler if the deadline passes first.
  virtual void wait_all(std::span<Request> requests) = 0;
  void wait(Request& request) { wait_all(std::span<Request>(&request, 1)); }
  /// True when the request has completed (it is then released); never blocks.
  virtual bool test(Request& request) = 0;

  /// dst = dst op src over count elements, where the transport's buffers live.
  virtual void reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  /// The corrupt fault (comm/execution/fault.h): flips bit 0x40 of the byte at p, which a receive just
  /// waited for has written, before anything enqueued later reads it. On the host now; the
  /// transports of CUDA tensors do it on the device, in stream order.
  virtual void corrupt_byte(void* p);

  /// A buffer of at least `bytes` in the transport's memory, one per slot, grown on demand and
  /// kept across collectives so the algorithms allocate nothing per step.
  void* scratch(int slot, size_t bytes);

  /// Memory the transport's operations can use: host memory here; device memory for the
  /// transports of CUDA tensors, whose sends, receives and reductions take device pointers.
  using Buffer = std::unique_ptr<void, void (*)(void*)>;
  virtual Buffer allocate(size_t bytes);

  // --- the library's own collectives: `--algo native`, the baseline, never used by the algorithms.
  // Buffers may alias (in place); avg arrives as sum and the communicator divides. The defaults
  // fail: a transport without a library behind it has no collectives of its own.
  virtual void native_all_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op);
  virtual void native_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                             int root);
  virtual void native_broadcast(void* buffer, int64_t count, DType dtype, int root);
  virtual void native_all_gather(const void* input, void* output, int64_t chunk_count, DType dtype);
  virtual void native_reduce_scatter(const void* input, void* output, int64_t chunk_count, DType dtype,
                                     ReduceOp op);
  virtual void native_barrier();
  /// Gather, scatter, all-to-all and the uneven all-gather (BlockExchange). A block whose input is
  /// already where its output goes (in place at the root, or the all-gather's own block) is left.
  virtual void native_exchange(const BlockExchange& exchange);
  /// The transport whose native collectives take this one's tensors: itself, or the host transport
  /// when the library cannot read this transport's memory (MPI without CUDA support); the
  /// communicator then hands that one host copies.
  virtual Transport& native_transport() { return *this; }

  // --- devices: no-ops for host memory. The transports of CUDA tensors override them.
  /// True when buffers are device memory: the communicator hands tensors over as they are. A
  /// flag, not a virtual call: every collective asks it several times (docs/benchmarks.md).
  bool device_memory() const { return device_memory_; }
  /// True when the library behind the transport reads and writes device memory itself.
  virtual bool reads_device_memory() const { return false; }
  /// Before a collective, on the thread that runs it: the device is selected per host thread,
  /// and the transport's work is ordered after `ready` (CollectiveOptions::ready), else after
  /// what `caller_stream` (CollectiveOptions::stream) has enqueued by now.
  virtual void begin_collective(void* caller_stream, void* ready) {
    (void)caller_stream;
    (void)ready;
  }
  /// After it: `caller_stream` waits for the collective (the host does not), or with `blocking`
  /// the host waits too; a watchdog names `what` if it is late past `timeout`.
  virtual void end_collective(const std::string& what, std::chrono::milliseconds timeout, bool blocking,
                              void* caller_stream);
  /// Blocks the host until everything the transport has enqueued is done.
  virtual void synchronize() {}
  /// The largest tag the library accepts (MPI_TAG_UB); the communicator fits its tags under it.
  virtual int tag_upper_bound() const;
  /// Whether a loop polling this transport should yield the core between polls (ranks that
  /// outnumber cores; MpiTransport::set_yield_when_idle).
  virtual bool yields_when_idle() const { return false; }
  /// Copies rank 0's `bytes` at `data` to every rank: how another transport bootstraps over this
  /// one (NCCL's unique id). A world of one has nothing to send.
  virtual void bootstrap_broadcast(void* data, size_t bytes);
  /// Shared-memory slots over every rank of the job (all on one host, comm/transport/shm/shared_slots.h), or
  /// null where there are none.
  virtual SharedSlots* shared_slots() { return nullptr; }
  /// Lets the library move messages already under way while this rank waits outside it. MPI may
  /// need the sender's calls to deliver a message whose send has completed (MPICH's shared
  /// memory does): a rank that spins on shared memory must keep calling it.
  virtual void progress() {}
  /// After a call failed: ends what a collective left posted (receives into the caller's tensors,
  /// sends reading them), where the library lets it (UCX: UcxTransport::abandon_pending). MPI's
  /// requests are left: cancelling a send is unreliable there.
  virtual void abandon_pending() {}

  /// Polls `done` until it is true under the collective's deadline: a wait on memory another
  /// process writes, with no library call to block in. `yield` gives the core away between polls
  /// (ranks that outnumber cores: a spinning rank would keep its peer from running).
  template <typename F>
  void poll_until(F&& done, bool yield) {
    IdleBackoff backoff(yield);
    for (uint32_t polls = 0; !done(); ++polls) {
      // After a sleep MPI has not moved anything for a while: let it, every time. And the clock
      // is read after each: a sleeping wait polls about once a millisecond, not 256 times.
      const bool slept = backoff.pause();
      if (slept || (polls & 63u) == 63u) progress();
      // Asked again after the deadline: a rank stopped (SIGSTOP, a debugger) past it may find on
      // resuming that what it waited for came long ago, and must not blame that peer.
      if ((slept || (polls & 255u) == 255u) && deadline_passed() && !done()) expire();
    }
  }

  void set_deadline(Clock::time_point deadline, std::function<void()> on_expiry) {
    deadline_ = deadline;
    on_expiry_ = std::move(on_expiry);
  }
  /// A new deadline for the handler already set (no std::function to rebuild per call).
  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }
  /// What every collective does: a deadline `timeout` after its first wait that has polled a
  /// while (256 polls) without finishing. Only such a wait reads the clock; a collective whose
  /// messages are there when it looks reads none: a clock read is a visible part of a small
  /// collective's cost (docs/benchmarks.md).
  void set_timeout(Clock::duration timeout) {
    timeout_ = timeout;
    deadline_ = kNotStarted;
  }
  bool has_expiry_handler() const { return static_cast<bool>(on_expiry_); }
  /// Asked wherever a wait reads its deadline (not owned; null: nothing watched).
  void set_watch(WaitWatch* watch) { watch_ = watch; }

 protected:
  Transport() = default;
  /// For the transports of CUDA tensors (CudaStreamTransport).
  explicit Transport(bool device_memory) : device_memory_(device_memory) {}
  bool deadline_passed() {
    check_watch();
    const auto now = Clock::now();
    if (deadline_ == kNotStarted) {
      deadline_ = now + timeout_;
      return false;
    }
    return now > deadline_;
  }
  [[noreturn]] void expire();
  /// Asks the watch now (a peer's end it knows becomes its error, naming the peer).
  void check_watch() {
    if (watch_) watch_->check();
  }

 private:
  bool device_memory_ = false;
  static constexpr Clock::time_point kNotStarted = Clock::time_point::min();
  Clock::time_point deadline_ = Clock::time_point::max();
  Clock::duration timeout_{};
  std::function<void()> on_expiry_;
  WaitWatch* watch_ = nullptr;
  struct Scratch {
    Buffer buffer{nullptr, nullptr};
    size_t bytes = 0;
  };
  std::vector<Scratch> scratch_;
};

/// A world of one: every collective is local, so nothing is ever sent.
class LocalTransport final : public Transport {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Request isend(int peer, const void*, size_t, int) override;
  Request irecv(int peer, void*, size_t, int) override;
  void wait_all(std::span<Request>) override {}
  bool test(Request&) override { return true; }
  void reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  // A world of one's own collectives leave the one contribution where the output is.
  void native_all_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp) override;
  void native_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp, int) override;
  void native_broadcast(void*, int64_t, DType, int) override {}
  void native_all_gather(const void* input, void* output, int64_t chunk_count, DType dtype) override;
  void native_reduce_scatter(const void* input, void* output, int64_t chunk_count, DType dtype,
                             ReduceOp) override;
  void native_barrier() override {}
  void native_exchange(const BlockExchange& exchange) override;
};

}  // namespace ringdp::comm

// Folder comm/transport/cuda/: the transports of CUDA tensors (NCCL's point-to-point, CUDA
// memory over MPI), what they share (this header), and NCCL's own collectives.
//
// What the two transports of CUDA tensors (NcclTransport, MpiCudaTransport) share: a device, a
// stream of their own, and how a collective on that stream is joined to the caller's.
//
//   caller's stream  ──[backward]──●compute_done              ┌──[optimizer step] …
//                                   ╲ wait_for_compute()       │ (cudaStreamWaitEvent)
//   transport stream                 ╲──[sends, receives, reductions]──●done
//                                                                      ╰─ watchdog: done within the timeout?
//
// A collective begins by making the transport's stream wait for the caller's (legacy default)
// stream, and ends with join_caller(): the caller's stream waits for the collective's completion
// event and the host goes on at once. Only synchronize() blocks the host, and only when asked
// (RINGDP_BLOCKING_WAIT=1, or a caller that needs the bytes on the host). Because nothing blocks,
// a watchdog thread watches every outstanding completion event against the collective timeout
// and the library's asynchronous errors, and ends the job with a message instead of a hang.
// The timeout counts from when the GPU starts the collective (an event recorded at its start),
// not from when the host enqueued it behind a long backward pass; one that never starts is
// reported after 4 timeouts, naming the work before it. The watchdog calls no MPI and touches
// nothing of the transport's library: it reports and ends the process (abort_job_from_thread),
// while another thread may be inside MPI or NCCL.
#pragma once

#include "comm/transport/transport.h"
#include "config.h"

#if RINGDP_HAVE_CUDA || defined(RINGDP_CUDA_EMULATOR)
#include <cuda_runtime.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ringdp::comm {

class CudaStreamTransport : public Transport {
 public:
  ~CudaStreamTransport() override;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  Buffer allocate(size_t bytes) override;  // device memory: the algorithms' scratch lives there

  /// activate(), then the stream waits for `ready` or, without one, wait_for_compute(caller_stream).
  void begin_collective(void* caller_stream, void* ready) override;
  /// join_caller(what, timeout, caller_stream), or synchronize() when `blocking`.
  void end_collective(const std::string& what, std::chrono::milliseconds timeout, bool blocking,
                      void* caller_stream) override;

  /// Makes the calling host thread use the transport's device: cudaSetDevice is per thread, and
  /// asynchronous collectives run on the communicator's worker thread.
  void activate();
  /// Makes the transport's stream wait for work already on `caller` (null: the legacy default
  /// stream; torch's current stream when the torch backend carries CUDA tensors).
  void wait_for_compute(cudaStream_t caller = nullptr);
  /// Blocks until everything enqueued on the stream has finished, polling against the deadline.
  void synchronize() override;
  /// On the device, on the transport's stream (NCCL: its reduction stream), after the receive.
  void corrupt_byte(void* p) override;
  /// Ends a collective without blocking the host: `caller` (as in wait_for_compute) waits for its
  /// completion, and the watchdog reports `what` if it has not completed within `timeout`.
  void join_caller(const std::string& what, std::chrono::milliseconds timeout, cudaStream_t caller = nullptr);

 protected:
  /// Selects `device` (the communicator's choice: Communicator::device()) and creates the
  /// stream; `who` names the user of the device in the error when there is none.
  CudaStreamTransport(int device, const char* who);
  /// Hands recorded but not yet issued operations to the stream (NCCL's pending group); called
  /// before the stream is waited for or joined.
  virtual void issue_pending() {}
  /// Throws when the library behind the transport has failed asynchronously (NCCL); polled by
  /// every wait and by the watchdog.
  virtual void check_async() {}
  /// Called on the thread that owns the transport (never the watchdog) when a wait passes its
  /// deadline, before the job ends (NCCL aborts its communicator there).
  virtual void on_stuck() {}
  /// Derived destructors call this first: the watchdog must not poll what they tear down.
  void stop_watchdog();
  /// Events without timing, pooled: created on first need, reused after release, destroyed with
  /// the transport. Thread-safe (the watchdog releases the ones it has seen fire).
  cudaEvent_t acquire_event();
  void release_event(cudaEvent_t event);

  cudaStream_t stream_ = nullptr;
  int device_ = 0;

 private:
  void watch();

  struct Outstanding {
    cudaEvent_t start;  // null when joined without begin_collective: counted from the join
    cudaEvent_t done;
    Clock::time_point joined;
    std::chrono::milliseconds timeout;
    bool started;
    Clock::time_point started_at;
    std::string what;
  };
  cudaEvent_t compute_done_ = nullptr;
  cudaEvent_t start_ = nullptr;  // recorded by begin_collective, handed to the next join
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Outstanding> outstanding_;
  std::mutex events_mutex_;  // guards the two below; taken inside mutex_ (the watchdog), never around it
  std::vector<cudaEvent_t> spare_events_;
  std::vector<cudaEvent_t> all_events_;
  bool stopping_ = false;
  std::thread watchdog_;
};

}  // namespace ringdp::comm

#endif

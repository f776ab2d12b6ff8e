// CallQueue: the order of everything issued on the communicators of one process (one queue for
// all of them: a group's and its parent's calls reach MPI from one thread at a time, in the order
// they were issued; two queues would let a worker run a group's collective while another thread
// is inside the parent's, which MPI_THREAD_SERIALIZED forbids). The price: every rank must issue
// the calls of all its communicators in one order its peers can follow. Torch asks only for one
// order per group, and a program whose asynchronous calls on overlapping groups form a cycle
// (rank 0: A then C, rank 1: B then A, rank 2: C then B) completes on gloo, whose groups have a
// thread each, and waits here until the watchdog ends it (docs/torch.md). One worker thread runs queued
// calls in issue order; a blocking call issued when nothing is queued or running runs on the
// caller's thread instead (a hand-off costs microseconds, more than a whole small all-reduce on
// one node). Whichever thread runs a call holds exec_mutex() meanwhile, so MPI sees one thread
// at a time (MPI_THREAD_SERIALIZED). Where MPI allows no second thread (MPI_THREAD_SINGLE or
// FUNNELED: comm/mpi_runtime.h), set_caller_thread_only() makes every call, asynchronous ones
// too, run on the caller's thread as it is issued: no worker, no overlap, nothing MPI forbids.
// Tested through the communicator: tests/mpi/test_comm_async.cpp, tests/mpi/test_thread_single.cpp.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "comm/mpi_runtime.h"
#include "comm/work.h"

namespace ringdp::comm {

class CallQueue {
 public:
  CallQueue() = default;
  /// The process's queue, made when the first communicator needs it and shared by every
  /// communicator alive (RINGDP_MPI_THREAD's single applies to it as a whole).
  static std::shared_ptr<CallQueue> for_process();
  /// Runs what is still queued, then stops the worker. In a forked child (comm/mpi_runtime.h) the
  /// worker is the parent's: let go, not joined.
  ~CallQueue();
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;

  /// Runs `call` after everything issued before it. Blocking (`async` false): returns when it has
  /// run, rethrowing its error. Asynchronous: returns at once; the Work completes (or carries the
  /// error) when the worker has run it.
  Work run(std::function<void()> call, bool async);
  /// Returns when everything issued before it has run (a communicator's last act: its queued calls
  /// use its members). At once in a forked child, which runs nothing.
  void drain() {
    if (!in_forked_child()) run([] {}, false);
  }
  /// The blocking fast path without the std::function run() would build (a heap allocation per
  /// call, docs/benchmarks.md): runs `call` on this thread and returns true when nothing is
  /// queued or running; returns false, running nothing, otherwise (then use run()).
  template <typename F>
  bool run_inline(F&& call) {
    if (in_forked_child()) refuse_in_child();
    // One load instead of the queue's lock, on every blocking call (docs/benchmarks.md). A call
    // queued by another thread after this load may still take exec_mutex first, as it could
    // after the lock was released: calls issued from several threads at once have no order
    // between them either way.
    if (in_flight_.load(std::memory_order_acquire) != 0) return false;
    // Where MPI allows one thread only, no second thread may issue anything: a lock would guard
    // nothing and cost two atomic operations per call (docs/benchmarks.md).
    if (caller_thread_only_) {
      call();
      return true;
    }
    std::lock_guard exec(exec_mutex_);
    call();
    return true;
  }
  /// From now on no worker thread: asynchronous calls run at once on the caller's thread and
  /// return a completed Work that carries their error, if any. Call before issuing anything.
  void set_caller_thread_only() { caller_thread_only_ = true; }
  /// Held while a call runs; whoever else talks to the transport (a send's completion) takes it too.
  std::mutex& exec_mutex() { return exec_mutex_; }

 private:
  void worker_loop();
  /// Throws: a forked child cannot use its parent's communicators.
  [[noreturn]] static void refuse_in_child();

  std::mutex exec_mutex_;
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<std::function<void()>> queue_;
  std::atomic<int> in_flight_{0};  // queued, or running on the worker
  bool stopping_ = false;
  bool caller_thread_only_ = false;
  std::thread worker_;
};

}  // namespace ringdp::comm

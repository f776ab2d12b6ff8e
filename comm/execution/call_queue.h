// CallQueue: the order of everything issued on a communicator. One worker thread runs queued
// calls in issue order; a blocking call issued when nothing is queued or running runs on the
// caller's thread instead (a hand-off costs microseconds, more than a whole small all-reduce on
// one node). Whichever thread runs a call holds exec_mutex() meanwhile.
//
// How many queues: where MPI provides MPI_THREAD_MULTIPLE (asked for by default), each
// communicator has its own (for_communicator()), so independent groups progress independently, as
// torch asks and as gloo's groups do: four threads on four groups finish whatever order each rank
// runs them in (issue #47 item 7). Below it, at MPI_THREAD_SERIALIZED (RINGDP_MPI_THREAD=serialized,
// or an MPI that provides no more), one queue serves every communicator of the process
// (for_process()): a group's and its parent's calls reach MPI one at a time, in the order they were
// issued, and every rank must issue the calls of all its communicators in one order its peers can
// follow. Ranks that do not follow it wait for each other until the watchdog, whose report then
// names the calls of the other communicators waiting behind the stuck one (waiting()). Where MPI allows no
// second thread (MPI_THREAD_SINGLE or FUNNELED: comm/bootstrap/mpi_runtime.h), set_caller_thread_only()
// makes every call, asynchronous ones too, run on the caller's thread as it is issued: no worker,
// no overlap, nothing MPI forbids. Tested through the communicator: tests/mpi/test_comm_async.cpp,
// tests/mpi/test_thread_single.cpp, tests/mpi/test_group_threads.cpp.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "comm/bootstrap/mpi_runtime.h"
#include "comm/work.h"

namespace ringdp::comm {

class CallQueue {
 public:
  CallQueue() = default;
  /// The process's queue, made when the first communicator needs it and shared by every
  /// communicator alive (RINGDP_MPI_THREAD's single applies to it as a whole).
  static std::shared_ptr<CallQueue> for_process();
  /// A new communicator's queue: its own where MPI provides MPI_THREAD_MULTIPLE (or is not in
  /// use), else the process's.
  static std::shared_ptr<CallQueue> for_communicator();
  /// Runs what is still queued, then stops the worker. In a forked child (comm/bootstrap/mpi_runtime.h) the
  /// worker is the parent's: let go, not joined.
  ~CallQueue();
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;

  /// Runs `call` after everything issued before it. Blocking (`async` false): returns when it has
  /// run, rethrowing its error. Asynchronous: returns at once; the Work completes (or carries the
  /// error) when the worker has run it.
  /// `note` says what the call is for a watchdog report on a shared queue (waiting()); it is
  /// made only when this queue is the process's.
  Work run(std::function<void()> call, bool async, const std::function<std::string()>& note = {});
  /// Returns when everything issued before it has run (a communicator's last act: its queued calls
  /// use its members). At once in a forked child, which runs nothing.
  void drain() {
    if (!in_forked_child()) run([] {}, false);
  }
  /// The blocking fast path without the std::function run() would build (a heap allocation per
  /// call, docs/benchmarks.md): runs `call` on this thread and returns true when nothing is
  /// queued or running; returns false, running nothing, otherwise (then use run()).
  /// `note()` says what the call is, for waiting(); asked only when the call has to wait for the
  /// execution lock on a queue several communicators share.
  template <typename F, typename N = std::string (*)()>
  bool run_inline(F&& call, N&& note = nullptr) {
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
    std::unique_lock exec(exec_mutex_, std::try_to_lock);
    if (!exec.owns_lock()) {
      // Only a shared queue's watchdog report lists the calls waiting behind another group's:
      // elsewhere no list entry (an allocation and a lock) is made for a contended call.
      if constexpr (std::is_same_v<std::decay_t<N>, std::string (*)()>) {
        exec.lock();
      } else if (!shared_) {
        exec.lock();
      } else {
        Waiting waiting(*this, note());
        exec.lock();
      }
    }
    call();
    return true;
  }
  /// From now on no worker thread: asynchronous calls run at once on the caller's thread and
  /// return a completed Work that carries their error, if any. Call before issuing anything.
  void set_caller_thread_only() { caller_thread_only_ = true; }
  /// Held while a call runs; whoever else talks to the transport (a send's completion) takes it too.
  std::mutex& exec_mutex() { return exec_mutex_; }
  /// The process's queue, which several communicators share (for_process()).
  bool shared() const { return shared_; }
  /// What the calls queued (in issue order), then those blocked on the execution lock, are, as
  /// their notes say: on a shared queue, the collectives of other communicators a stuck one holds
  /// back (calls that carry no note, such as a group's creation, are not listed).
  std::vector<std::string> waiting();

 private:
  /// Lists a blocking call as waiting while it lives (run_inline).
  class Waiting {
   public:
    Waiting(CallQueue& queue, std::string note);
    ~Waiting();
    Waiting(const Waiting&) = delete;
    Waiting& operator=(const Waiting&) = delete;

   private:
    CallQueue& queue_;
    std::list<std::string>::iterator entry_;
  };
  void worker_loop();
  /// Throws: a forked child cannot use its parent's communicators.
  [[noreturn]] static void refuse_in_child();

  std::mutex exec_mutex_;
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<std::function<void()>> queue_;
  std::deque<std::string> queued_notes_;  // beside queue_, on a shared queue only
  std::mutex waiting_mutex_;
  std::list<std::string> blocked_notes_;  // blocking calls waiting for exec_mutex_ (Waiting)
  std::atomic<int> in_flight_{0};  // queued, or running on the worker
  bool stopping_ = false;
  bool caller_thread_only_ = false;
  bool shared_ = false;
  std::thread worker_;
};

}  // namespace ringdp::comm

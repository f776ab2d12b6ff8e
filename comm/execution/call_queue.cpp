// Implements comm/execution/call_queue.h (the contract is documented there). Tested by
// tests/mpi/test_comm_async.cpp.
#include "comm/execution/call_queue.h"

#include <exception>
#include <utility>

#include "core/error.h"
#include "core/timeline.h"

namespace ringdp::comm {

CallQueue::~CallQueue() {
  if (in_forked_child()) {
    if (worker_.joinable()) new std::thread(std::move(worker_));  // the parent's thread, never ours
    return;
  }
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

std::shared_ptr<CallQueue> CallQueue::for_process() {
  static std::mutex mutex;
  static std::weak_ptr<CallQueue> current;
  std::lock_guard lock(mutex);
  std::shared_ptr<CallQueue> queue = current.lock();
  if (!queue) {
    queue = std::make_shared<CallQueue>();
    queue->shared_ = true;
    current = queue;
  }
  return queue;
}

std::shared_ptr<CallQueue> CallQueue::for_communicator() {
  if (mpi_allows_independent_threads()) return std::make_shared<CallQueue>();
  return for_process();
}

CallQueue::Waiting::Waiting(CallQueue& queue, std::string note) : queue_(queue) {
  std::lock_guard lock(queue_.waiting_mutex_);
  entry_ = queue_.blocked_notes_.insert(queue_.blocked_notes_.end(), std::move(note));
}

CallQueue::Waiting::~Waiting() {
  std::lock_guard lock(queue_.waiting_mutex_);
  queue_.blocked_notes_.erase(entry_);
}

std::vector<std::string> CallQueue::waiting() {
  std::vector<std::string> notes;
  {
    std::lock_guard lock(queue_mutex_);
    for (const std::string& note : queued_notes_)
      if (!note.empty()) notes.push_back(note);
  }
  std::lock_guard lock(waiting_mutex_);
  for (const std::string& note : blocked_notes_)
    if (!note.empty()) notes.push_back(note);
  return notes;
}

namespace {
// Runs `call` and completes `work` with its outcome: the error waits in the Work for wait().
void run_into(const std::function<void()>& call, const Work& work) {
  try {
    call();
    work.mark_done();
  } catch (...) {
    work.mark_done(std::current_exception());
  }
}
}  // namespace

void CallQueue::refuse_in_child() {
  RINGDP_FAIL(
      "this communicator belongs to the process this one was forked from; a forked child (os.fork(), "
      "a DataLoader worker) shares no communicator with it: make the collective calls in the parent");
}

Work CallQueue::run(std::function<void()> call, bool async, const std::function<std::string()>& note) {
  if (in_forked_child()) refuse_in_child();
  if (!async && run_inline(call, [&] { return note ? note() : std::string(); })) return Work::returned();
  if (caller_thread_only_) {
    // Nothing is ever queued here, so a blocking call ran above; this is an asynchronous one.
    // Its error waits in its Work, for wait() to rethrow, as when the worker runs it.
    Work work;
    std::lock_guard exec(exec_mutex_);
    run_into(call, work);
    return work;
  }
  // Made before the lock: nothing that may throw or take time once the queue is held.
  std::string queued_note = shared_ && note ? note() : std::string();
  std::unique_lock lock(queue_mutex_);
  Work work;
  if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  if (shared_) queued_notes_.push_back(std::move(queued_note));
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  queue_.push_back([call = std::move(call), work] { run_into(call, work); });
  lock.unlock();
  queue_cv_.notify_one();
  if (!async) work.wait();
  return work;
}

void CallQueue::worker_loop() {
  timeline::set_thread_row(timeline::Row::comm);
  std::unique_lock lock(queue_mutex_);
  for (;;) {
    queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything issued has run
    auto call = std::move(queue_.front());
    queue_.pop_front();
    if (shared_) queued_notes_.pop_front();
    lock.unlock();
    {
      std::lock_guard exec(exec_mutex_);
      call();
    }
    in_flight_.fetch_sub(1, std::memory_order_release);
    lock.lock();
  }
}

}  // namespace ringdp::comm

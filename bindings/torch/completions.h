// Asynchronous calls of the ringdp backend: each call posts its collectives on ringdp's worker
// (CollectiveOptions::async, which runs them in issue order) and returns a Work at once; threads of
// the process group's own then complete the Works, taking them in issue order as each call's ringdp
// collectives are done: they write results back where torch wants them (non-contiguous tensors, the
// list outputs of all_gather), complete the future that DDP's comm hooks read, and wake whoever
// waits. So the backward pass overlaps the all-reduce of the buckets it has finished, as on gloo. A
// call its caller waits for before it is done is the exception: the caller completes it (below), so
// it may complete before an earlier call nobody waited for.
//
// Why threads and not completion on demand: DDP never calls wait() on a bucket's Work; it reads the
// future, whose callbacks must run when the collective is done. Why several (kThreads): a future's
// callbacks run on the thread that completes it and may wait for a later call (PowerSGD's hook
// does), and a receive waits for its peer, who may send only after a later call of ours completes:
// with one thread either would wait on itself. Each blocked thread leaves the others free.
//
// Why a caller that waits completes its own call (Call::wait), and the threads sleep until a call's
// collectives are done (the last one's Work::on_done wakes one) rather than wait on them: a small
// blocking all-reduce crossed four thread wake-ups (the worker, a completion thread at the issue,
// the same thread at the end, the caller), most of its time under PyTorch 2.15 (129 µs, 30 after;
// docs/lab/benchmarks.md); now two, the worker's and the caller's, as on gloo. Calls with nothing
// to wait for, and asynchronous sends and receives (their messages complete only when waited for:
// Work::needs_wait), are taken at once, as before.
//
// CUDA tensors (RINGDP_TORCH_CUDA): a call takes torch's current stream of their device when it
// is issued. The collectives wait for what was enqueued there by then (an event recorded at the
// issue: CollectiveOptions::ready) and that stream waits for them (CollectiveOptions::stream), so the host
// never waits for the GPU; the write-backs and the future's completion run on that stream too (its events are
// what the future's users wait on), and wait() makes the stream current then wait as well, as NCCL's Work
// does. Tested by tests/torch/ and, on a GPU, tests/gpu/device_check.sh.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include "bindings/torch/compat.h"
#include "bindings/torch/tensor_view.h"
#include "comm/comm_options.h"
#include "comm/work.h"

namespace ringdp_torch {

/// One call's state from its issue to its completion.
class Call final : public ::c10d::Work {
 public:
  Call(int rank, const char* name, std::vector<at::Tensor> outputs);
  /// A view of `tensor` (TensorView) that lives as long as the call; `output`: written back on
  /// completion when the view had to copy. Every tensor of a call is on one device.
  TensorView& view(const at::Tensor& tensor, const char* what, bool output);
  /// How the call's next collective is posted: asynchronously, on the stream taken by view(),
  /// after an event recorded there now (CollectiveOptions::ready).
  ringdp::comm::CollectiveOptions options();
  /// Refuses outputs on another device than the tensors viewed (the copies into them and the
  /// future's events are on that device's stream).
  void check_outputs() const;
  /// Refuses `tensor` on another device than the call's first, naming it as `what` and `part`.
  void check_device(const at::Tensor& tensor, const char* what, const char* part = "") const;
  /// A caller that waits for a CPU call without a timeout, before its collectives are done,
  /// completes it on its own thread (so the future's callbacks run there); otherwise it waits for
  /// a thread of Completions to. CUDA calls also make the caller's current stream wait for the
  /// call's.
  bool wait(std::chrono::milliseconds timeout = ::kNoTimeout) override;
  void add(ringdp::comm::Work work) { works_.push_back(std::move(work)); }
  /// Whether a collective was posted (an argument error after one must still let it finish).
  bool posted() const { return !works_.empty(); }
  /// Runs on completion, after the write-backs (all_gather's copy into torch's list).
  void then(std::function<void()> after) { after_ = std::move(after); }

  /// Where a receive from any rank writes its sender (Communicator::recv_any).
  int* source_slot() { return &source_; }
  /// The sender of a receive from any rank; torch's error for any other call.
  int sourceRank() const override { return source_ >= 0 ? source_ : ::c10d::Work::sourceRank(); }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  std::vector<at::Tensor> result() override { return outputs_; }

 private:
  friend class Completions;
  /// Who completes the call: decided once, by the first to claim it.
  enum class Owner { nobody, caller, threads };
  /// Waits for the collectives, writes back, completes the future and the Work; never throws.
  void complete();
  /// True to the first who claims the call (then `who` completes it), false to any later one.
  bool claim(Owner who) {
    Owner none = Owner::nobody;
    return owner_->compare_exchange_strong(none, who, std::memory_order_acq_rel);
  }
  Owner owner() const { return owner_->load(std::memory_order_acquire); }
  /// Waits for every collective, even after one failed; returns the first failure, as failure()
  /// makes it, or null.
  std::exception_ptr await_collectives();
  /// `e` as the call reports it: a std::runtime_error naming the call.
  std::exception_ptr failure(const std::exception& e) const;

  const char* name_;
  std::vector<at::Tensor> outputs_;
  std::deque<TensorView> views_;  // a deque: views stay where they are as more are added
  std::vector<bool> write_back_;
  std::vector<ringdp::comm::Work> works_;
  std::function<void()> after_;
  int source_ = -1;  // written before the call completes, read after wait(): ordered by its lock
  std::optional<c10::Device> device_;  // the device of the call's tensors, once one was viewed
  std::optional<c10::Stream> stream_;  // CUDA tensors: torch's current stream when issued
  std::deque<c10::Event> issued_;  // recorded there as each collective is posted (options())
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  // Shared with the hook on the last collective's Work, which claims the call for the threads
  // when it is done: the hook keeps no reference to the call, so none is ever dropped on
  // ringdp's worker (a tensor's last reference may need Python's interpreter).
  std::shared_ptr<std::atomic<Owner>> owner_ = std::make_shared<std::atomic<Owner>>(Owner::nobody);
  bool taken_at_once_ = false;  // no collective to wait for, or one done only when waited for
  std::weak_ptr<void> completions_;  // the Completions::State it was pushed to
};

class Completions {
 public:
  static constexpr int kThreads = 4;
  Completions();
  /// Completes every call issued, then stops the threads. It may run on one of them: a future's
  /// callback can hold the last reference to the process group (a Python closure over it). That
  /// thread is not joined (it would join itself) but let go; it finishes its call and stops on
  /// the state it shares, which outlives this object.
  ~Completions();
  Completions(const Completions&) = delete;
  Completions& operator=(const Completions&) = delete;
  /// Completes every call issued, then stops the threads (what the destructor does, earlier:
  /// the group's shutdown). Later calls complete on the caller's thread. Idempotent.
  void finish();
  /// Hands an issued call to the threads; they take calls in the order they are pushed, each once
  /// its collectives are done. Once the threads have stopped (stop_all), the call completes here,
  /// on the caller's thread.
  void push(c10::intrusive_ptr<Call> call);
  /// Drops `call` from the queue of the Completions it was pushed to: its caller completed it.
  static void forget(const Call& call);

  /// Completes every call issued on every Completions alive and stops their threads, detached
  /// ones included; returns when none runs. Python's exit runs it (bindings/torch/module.cpp)
  /// while the interpreter still works: a call dropped on one of these threads can release the
  /// last reference to a tensor Python owns, which needs the interpreter, and after it has begun
  /// to finalize that thread was ended by force and the process aborted (issue #47). Call
  /// without the GIL: a future's callback on these threads may be waiting for it.
  static void stop_all();

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable ready;
    std::condition_variable stopped;
    std::deque<c10::intrusive_ptr<Call>> queue;
    bool stopping = false;
    int running = 0;  // threads not yet out of run()
    // The threads themselves, here and not in the Completions: stop_all joins them, so that none
    // is still ending (its stack, its thread-local state) while the interpreter finalizes.
    std::mutex threads_mutex;
    std::vector<std::thread> threads;
    // Their ids, kept after a thread is let go (a detached std::thread forgets its id): a second
    // stop() on that thread (shutdown, then the last reference dropped there) must know it.
    std::vector<std::thread::id> ids;
  };
  /// Asks the threads of `state` to stop once its queue is empty, waits until they have, and
  /// joins them; the calling thread, when it is one of them, is let go instead (it cannot join
  /// itself, and it has only its own call left).
  static void stop(State& state);
  static void run(const std::shared_ptr<State>& state);
  /// Whether a thread may take `call` now: claimed (by its caller, to drop; by the threads, done)
  /// or taken at once.
  static bool ready(const Call& call) { return call.taken_at_once_ || call.owner() != Call::Owner::nobody; }

  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace ringdp_torch

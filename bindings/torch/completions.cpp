// Implements bindings/torch/completions.h (the contract is documented there).
#include "bindings/torch/completions.h"

#include <ATen/core/ivalue.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>

#include "comm/bootstrap/mpi_runtime.h"
#include "core/error.h"

namespace ringdp_torch {

Call::Call(int rank, const char* name, std::vector<at::Tensor> outputs)
    : ::c10d::Work(rank),
      name_(name),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

TensorView& Call::view(const at::Tensor& tensor, const char* what, bool output) {
  views_.emplace_back(tensor, what);  // refuses what the backend does not carry, naming it
  const c10::Device device = tensor.device();
  if (!device_) {
    device_ = device;
    if (device.is_cuda()) {
      stream_ = c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
      // A future of CUDA values: its users wait on the stream, not the host (nothing holds it yet).
      future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                         std::vector<c10::Device>{device});
    }
  }
  check_device(tensor, what);
  // ringdp's streams use the memory until the call's stream has waited for them: a tensor made on
  // another stream goes back to that stream's pool only after this one's work (as NCCL's backend
  // records its stream). A copy made here (not contiguous) was made on this stream already.
  if (stream_) tensor.record_stream(*stream_);
  write_back_.push_back(output);
  return views_.back();
}

ringdp::comm::CollectiveOptions Call::options() {
  ringdp::comm::CollectiveOptions options{.algorithm = ringdp::comm::Algorithm::automatic, .async = true};
#if RINGDP_TORCH_CUDA
  if (stream_) {
    options.stream = stream_->native_handle();
    // Now, on the issuing thread, after what the call itself enqueued (a packed copy, PREMUL_SUM's
    // multiplication): ringdp's worker starts the collective later, when the stream may hold
    // later work that is none of its business.
    issued_.emplace_back(stream_->device_type());
    issued_.back().record(*stream_);
    options.ready = issued_.back().eventId();
  }
#endif
  return options;
}

void Call::check_device(const at::Tensor& tensor, const char* what, const char* part) const {
  RINGDP_CHECK(!device_ || !tensor.defined() || tensor.device() == *device_, what, part, " is on ",
               tensor.device().str(), " but the call's first tensor is on ", device_->str(),
               ": every tensor of a call must be on one device");
}

void Call::check_outputs() const {
  for (const at::Tensor& t : outputs_) check_device(t, name_, "'s output");
}

bool Call::wait(std::chrono::milliseconds timeout) {
  // A CUDA call completes on its stream, in the order the completion threads keep; a timeout is
  // the base class's to keep.
  if (!stream_ && timeout == ::kNoTimeout && claim(Owner::caller)) {
    // Out of the queue first: a ready call behind it must not wait for this one's callbacks.
    Completions::forget(*this);
    complete();
  }
  const bool done = ::c10d::Work::wait(timeout);
#if RINGDP_TORCH_CUDA
  if (!stream_) return done;
  const c10::impl::DeviceGuardImplInterface* cuda = c10::impl::getDeviceGuardImpl(stream_->device_type());
  const c10::Stream current = cuda->getStream(stream_->device());
  if (current != *stream_) {
    c10::Event joined(stream_->device_type());
    joined.record(*stream_);
    joined.block(current);
  }
#endif
  return done;
}

std::exception_ptr Call::await_collectives() {
  std::exception_ptr error;
  // Every collective is waited for, even after one failed: a later one may still be running on the
  // memory the views keep alive.
  for (ringdp::comm::Work& work : works_) {
    try {
      work.wait();
    } catch (const std::exception& e) {
      if (!error) error = failure(e);
    }
  }
  return error;
}

std::exception_ptr Call::failure(const std::exception& e) const {
  // A std::runtime_error, which torch's bindings raise in Python as RuntimeError.
  return std::make_exception_ptr(std::runtime_error(std::string("ringdp: ") + name_ + ": " + e.what()));
}

void Call::complete() {
  std::exception_ptr error = await_collectives();  // the first failure is the one reported
  // On the call's stream: the write-backs queue there after the collectives, and the future's
  // events are recorded there (no-op for CPU tensors).
  std::optional<c10::StreamGuard> on_stream;
  if (stream_) on_stream.emplace(*stream_);
  if (!error) {
    try {
      for (size_t i = 0; i < views_.size(); ++i)
        if (write_back_[i]) views_[i].write_back();
      if (after_) after_();
    } catch (const std::exception& e) {
      error = failure(e);
    }
  }
  if (error)
    // A collective that failed (a timeout, a peer that left) may have left receives posted on
    // this memory, which a late peer's message can still reach: it must never be freed. Leaked,
    // and never destroyed, since a tensor's destructor may need the interpreter (few bytes of
    // handles per failed call; the group is broken after the first).
    new std::deque<TensorView>(std::move(views_));
  views_.clear();  // the borrowed memory is torch's again
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
  finish(error);
}

namespace {
// The states of every Completions alive, for stop_all; a State outlives its Completions while a
// detached thread still runs on it, and stop_all waits for that thread too.
std::mutex g_states_mutex;
std::vector<std::weak_ptr<void>> g_states;
}  // namespace

Completions::Completions() {
  {
    std::lock_guard lock(g_states_mutex);
    std::erase_if(g_states, [](const std::weak_ptr<void>& s) { return s.expired(); });
    g_states.push_back(state_);
  }
  std::lock_guard lock(state_->threads_mutex);
  for (int i = 0; i < kThreads; ++i) {
    // Counted before it starts (its exit counts down), and only if it did start: a thread that
    // could not be made must not leave stop_all waiting for it at exit.
    {
      std::lock_guard count(state_->mutex);
      ++state_->running;
    }
    try {
      state_->threads.emplace_back([state = state_] { run(state); });
      state_->ids.push_back(state_->threads.back().get_id());
    } catch (...) {
      std::lock_guard count(state_->mutex);
      --state_->running;
      throw;
    }
  }
}

void Completions::stop(State& state) {
  // On one of the threads (a future's callback dropped the group), that thread is still running.
  bool own_thread = false;
  {
    std::lock_guard lock(state.threads_mutex);
    for (const std::thread::id id : state.ids) own_thread |= id == std::this_thread::get_id();
  }
  {
    std::unique_lock lock(state.mutex);
    state.stopping = true;
    state.ready.notify_all();
    state.stopped.wait(lock, [&] { return state.running == (own_thread ? 1 : 0); });
  }
  std::lock_guard lock(state.threads_mutex);
  for (std::thread& thread : state.threads) {
    if (!thread.joinable()) continue;  // joined by an earlier stop
    if (thread.get_id() == std::this_thread::get_id())
      thread.detach();
    else
      thread.join();
  }
}

void Completions::stop_all() {
  std::vector<std::shared_ptr<void>> alive;
  {
    std::lock_guard lock(g_states_mutex);
    for (const auto& weak : g_states)
      if (auto state = weak.lock()) alive.push_back(std::move(state));
  }
  for (const auto& state : alive) stop(*static_cast<State*>(state.get()));
}

Completions::~Completions() {
  if (ringdp::comm::in_forked_child()) {
    // The threads are the parent's: this process has none to stop or join (joining one crashed),
    // and the state's condition variables have the parent's waiters. Both are let go.
    new std::shared_ptr<State>(std::move(state_));
    return;
  }
  finish();
}

void Completions::finish() {
  // Python may drop the last reference to the group, or call shutdown, with the GIL held, while a
  // pending future's Python callback, on one of these threads, waits for the GIL.
  std::optional<pybind11::gil_scoped_release> no_gil;
  if (Py_IsInitialized() && PyGILState_Check()) no_gil.emplace();
  stop(*state_);
}

void Completions::push(c10::intrusive_ptr<Call> call) {
  call->taken_at_once_ = call->works_.empty() || std::any_of(call->works_.begin(), call->works_.end(),
                                                             [](const auto& w) { return w.needs_wait(); });
  call->completions_ = state_;
  {
    std::unique_lock lock(state_->mutex);
    if (state_->running == 0) {
      lock.unlock();  // complete() waits for the collectives: not under the lock hooks take
      // No thread left to do it (stop_all: the process is exiting).
      if (call->claim(Call::Owner::threads)) call->complete();
      return;
    }
    state_->queue.push_back(call);
    if (call->taken_at_once_) {
      state_->ready.notify_one();
      return;
    }
  }
  // Collectives run in issue order, so the last one's end is the call's. Its hook wakes a thread
  // unless the caller waits already and completes the call itself.
  call->works_.back().on_done([owner = call->owner_, weak = std::weak_ptr<State>(state_)] {
    Call::Owner none = Call::Owner::nobody;
    if (!owner->compare_exchange_strong(none, Call::Owner::threads, std::memory_order_acq_rel)) return;
    if (std::shared_ptr<State> state = weak.lock()) {
      { std::lock_guard lock(state->mutex); }  // a thread checking ready() sees the claim or this wake
      state->ready.notify_one();
    }
  });
}

void Completions::forget(const Call& call) {
  auto state = std::static_pointer_cast<State>(call.completions_.lock());
  if (!state) return;
  std::lock_guard lock(state->mutex);
  std::erase_if(state->queue, [&](const c10::intrusive_ptr<Call>& queued) { return queued.get() == &call; });
  // The call behind it may be ready already (taken at once), its wake-up spent while this one,
  // still at the front, was not.
  if (!state->queue.empty() && ready(*state->queue.front())) state->ready.notify_one();
}

void Completions::run(const std::shared_ptr<State>& state) {
  for (;;) {
    c10::intrusive_ptr<Call> call;
    {
      std::unique_lock lock(state->mutex);
      // Stopping, every call is taken, done or not: the threads end only once all are complete.
      state->ready.wait(
          lock, [&] { return state->stopping || (!state->queue.empty() && ready(*state->queue.front())); });
      if (state->queue.empty()) {  // stopping, and every call issued is complete
        --state->running;
        state->stopped.notify_all();
        return;
      }
      call = std::move(state->queue.front());
      state->queue.pop_front();
      // The next may be ready too, and this thread may be held long (a future's callback).
      if (!state->queue.empty() && ready(*state->queue.front())) state->ready.notify_one();
    }
    if (call->owner() == Call::Owner::caller) continue;  // its caller completes it
    if (call->owner() == Call::Owner::nobody) {
      // Taken at once, or at the stop: claimed once done, so that a caller who waits for it by
      // then completes it on its own thread.
      call->await_collectives();
      call->claim(Call::Owner::threads);
    }
    if (call->owner() == Call::Owner::threads) call->complete();
  }
}

}  // namespace ringdp_torch

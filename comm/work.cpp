// Implements comm/work.h (the contract is documented there). Tested by tests/mpi/test_comm_async.cpp.
#include "comm/work.h"

#include "core/error.h"

namespace ringdp::comm {

Work::Work() : state_(std::make_shared<State>()) {}

Work Work::completed() {
  Work work(nullptr);
  work.done_at_ = std::chrono::steady_clock::now();
  return work;
}

Work Work::then(Work posted, std::function<void()> finish, std::function<bool()> poll) {
  Work work;
  if (!posted.state_) {  // posted finished already: give it a state the two-part logic can read
    posted.state_ = std::make_shared<State>();
    posted.state_->done = true;
    posted.state_->done_at = posted.done_at_;
  }
  work.state_->posted = posted.state_;
  work.state_->finish = std::move(finish);
  work.state_->poll = std::move(poll);
  return work;
}

void Work::finish_once() const {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->finishing) return;  // another thread finishes it; wait() then waits for done
    state_->finishing = true;
  }
  Work posted(nullptr);  // no state of its own: it shares the first part's
  posted.state_ = state_->posted;
  try {
    posted.wait();
    state_->finish();
    mark_done();
  } catch (...) {
    mark_done(std::current_exception());
  }
}

void Work::wait() const {
  if (!state_) return;
  if (state_->posted && !is_completed()) finish_once();
  std::unique_lock lock(state_->mutex);
  state_->done_cv.wait(lock, [&] { return state_->done; });
  if (state_->error) std::rethrow_exception(state_->error);
}

bool Work::is_completed() const {
  if (!state_) return true;
  {
    std::lock_guard lock(state_->mutex);
    if (state_->done || !state_->posted) return state_->done;
  }
  Work posted(nullptr);  // no state of its own: it shares the first part's
  posted.state_ = state_->posted;
  if (posted.is_completed() && state_->poll()) finish_once();
  std::lock_guard lock(state_->mutex);
  return state_->done;
}

namespace {
// A hook that throws would leave the work's end half told: the process ends instead.
void run_hook(const std::function<void()>& hook) noexcept { hook(); }
}  // namespace

void Work::mark_done(std::exception_ptr error) const {
  if (!state_) return;  // complete since it was made
  std::function<void()> hook;
  {
    std::lock_guard lock(state_->mutex);
    state_->done = true;
    state_->done_at = std::chrono::steady_clock::now();
    state_->error = std::move(error);
    hook = std::move(state_->on_done);
  }
  state_->done_cv.notify_all();
  if (hook) run_hook(hook);
}

void Work::on_done(std::function<void()> hook) const {
  RINGDP_CHECK(!needs_wait(), "Work::on_done: this work completes only when waited for (a two-part work)");
  if (state_) {
    std::lock_guard lock(state_->mutex);
    if (!state_->done) {
      RINGDP_CHECK(!state_->on_done, "Work::on_done: this work has a hook already (one per work)");
      state_->on_done = std::move(hook);
      return;
    }
  }
  run_hook(hook);
}

}  // namespace ringdp::comm

namespace ringdp::comm {
std::chrono::steady_clock::time_point Work::completed_at() const {
  if (!state_) {
    RINGDP_CHECK(
        done_at_ != untimed(),
        "Work::completed_at: this is a blocking call's Work, which keeps no completion time (the call "
        "had completed when it returned); read the clock after the call instead");
    return done_at_;
  }
  std::lock_guard lock(state_->mutex);
  return state_->done_at;
}
}  // namespace ringdp::comm

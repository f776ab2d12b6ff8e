// Work: the handle an asynchronous collective returns (PyTorch's name). wait() blocks until
// the collective has run on this rank and rethrows its error, if any.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>

namespace ringdp::comm {

class Work {
 public:
  Work();  ///< an unfinished work item
  /// Work that is complete, finished now (its completion time is read).
  static Work completed();
  /// What a blocking call returns: complete before the call returned. It keeps no completion
  /// time (a clock read is a fifth of a whole small call's cost, docs/benchmarks.md): time the
  /// call itself.
  static Work returned() { return Work(nullptr); }

  void wait() const;
  bool is_completed() const;
  /// When the work finished on this rank (valid once is_completed()). Throws for a blocking
  /// call's Work (returned()), which keeps no time.
  std::chrono::steady_clock::time_point completed_at() const;

  void mark_done(std::exception_ptr error = nullptr) const;

  /// Runs `hook` once the work is done: on the thread that marks it done, after it has woken the
  /// waiters, or at once, here, when it is done already. For whoever must learn of the end
  /// without a thread of its own blocked in wait() (the torch backend's completion threads, which
  /// sleep until a call is done: bindings/torch/completions.h). One hook per work; it must not
  /// throw. Not for work that completes only when waited for (needs_wait()).
  void on_done(std::function<void()> hook) const;
  /// Whether the work completes only inside wait() or is_completed() (two-part work, then()).
  bool needs_wait() const { return state_ && state_->posted; }

  /// Work done in two parts: `posted` (the queued part) and then `finish`, run once by the
  /// first wait() (or by is_completed() when `poll` says the rest is already done). Used by
  /// asynchronous send/recv, whose messages complete outside the ordered queue.
  static Work then(Work posted, std::function<void()> finish, std::function<bool()> poll);

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    bool finishing = false;  // two-part work: finish_once has begun (wait() and is_completed() may race)
    std::chrono::steady_clock::time_point done_at;
    std::exception_ptr error;
    std::shared_ptr<State> posted;  // set for two-part work
    std::function<void()> finish;
    std::function<bool()> poll;
    std::function<void()> on_done;
  };
  explicit Work(std::nullptr_t) {}
  void finish_once() const;
  /// The shared state; null for work that was complete when made (Work::completed(), every
  /// blocking call that ran in place): those need no allocation, which every small call would
  /// pay (docs/benchmarks.md), and keep their completion time here, if any (returned(): none).
  std::shared_ptr<State> state_;
  std::chrono::steady_clock::time_point done_at_ = untimed();
  static constexpr std::chrono::steady_clock::time_point untimed() {
    return std::chrono::steady_clock::time_point::min();
  }
};

}  // namespace ringdp::comm

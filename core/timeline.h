// The timeline: what this process did and when, as Chrome trace-event JSON (RINGDP_TIMELINE=path),
// for chrome://tracing, Perfetto and scripts/plot-timeline. It lives in core/ because
// every layer records into it: autograd its backward nodes, DDP its hooks, buckets and waits, the
// communicator each collective and each of its steps.
//
// Off unless RINGDP_TIMELINE is set, and then one branch per would-be event. When on, events go
// into memory under a mutex and the file is written at exit (or by write()): a trace of one
// rank, pid = its rank, one row (tid) per Row. Times are steady_clock microseconds, which Linux
// shares across the processes of one host, so the ranks' files line up when opened together.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

namespace ringdp::timeline {

using Clock = std::chrono::steady_clock;

/// The rows of a rank's trace.
enum class Row : int {
  main = 1,  ///< the training thread: backward nodes, gradient hooks, waits
  buckets = 2,  ///< DDP buckets from launch to completion (async events, one track per bucket)
  comm = 3,  ///< the communicator's worker: each collective and its steps
};

namespace detail {
extern std::atomic<bool> g_enabled;
}

/// Cheap enough for every call site: a relaxed load.
inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }

/// Reads RINGDP_TIMELINE; when set, starts recording for `rank` and writes
/// path_for_rank(value, rank) at exit. Later calls (a second communicator) change nothing.
void start_from_environment(int rank);
/// Starts recording into `path` as `rank` (tests; start_from_environment in programs).
void start(const std::string& path, int rank);
/// "t.json" → "t.rank2.json"; any other name gets ".rank2.json" appended.
std::string path_for_rank(const std::string& base, int rank);
/// Writes the file now (throws ringdp::Error naming the path when it cannot). Idempotent until
/// more events arrive.
void write();
/// Stops recording and forgets the events (tests).
void stop();

/// The row events of this thread land on unless they name one: Row::main, except on threads
/// that set their own (the communicator's worker).
void set_thread_row(Row row);
Row thread_row();

/// A complete event: `name` from begin to end. args_json: the inside of a JSON object
/// ("\"bucket\": 1, \"offset\": 0"), or empty.
void complete(const char* category, std::string name, Clock::time_point begin, Clock::time_point end, Row row,
              std::string args_json = {});
/// An async interval (its own track per id), for things that overlap on one row: DDP buckets.
void async_interval(const char* category, std::string name, int id, Clock::time_point begin,
                    Clock::time_point end, Row row, std::string args_json = {});
/// Escapes a string for a JSON string literal (without the quotes).
std::string json_escape(const std::string& text);

/// Records [construction, destruction) on this thread's row when the timeline is on.
class Scope {
 public:
  Scope(const char* category, const char* name) : category_(category), name_(name) {
    if (enabled()) begin_ = Clock::now();
  }
  ~Scope() {
    if (begin_ != Clock::time_point{}) complete(category_, name_, begin_, Clock::now(), thread_row(), args_);
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  /// Sets the event's arguments (only worth building when active()).
  void set_args(std::string args_json) { args_ = std::move(args_json); }
  bool active() const { return begin_ != Clock::time_point{}; }

 private:
  const char* category_;
  const char* name_;
  std::string args_;
  Clock::time_point begin_{};
};

}  // namespace ringdp::timeline

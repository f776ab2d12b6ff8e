// Implements core/timeline.h. Tested by tests/unit/test_timeline.cpp and, on real runs, by
// the `timeline` case of tests/cli/train.sh.
#include "core/timeline.h"

#include "core/settings.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"

namespace ringdp::timeline {

namespace detail {
std::atomic<bool> g_enabled{false};
}

namespace {
struct Event {
  char phase;  // 'X' complete, 'b'/'e' async begin/end
  const char* category;
  std::string name;
  int64_t ts_ns, dur_ns;
  int row, id;
  std::string args;
};

struct Recorder {
  std::mutex mutex;
  std::vector<Event> events;
  std::string path;
  int rank = 0;
  bool written = false;
  bool exit_hook = false;
};
Recorder& recorder() {
  static Recorder* r = new Recorder;  // never destroyed: the exit hook and late threads use it
  return *r;
}
thread_local Row t_row = Row::main;

int64_t ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

void push(Event event) {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (!enabled()) return;
  r.events.push_back(std::move(event));
  r.written = false;
}

// The program's own status is already decided when this runs, and returning would report it;
// a trace that could not be written is a failure of the run, so the process ends with 1 here
// (after flushing what it printed: _Exit skips that).
pid_t g_writer = 0;  // the process that started recording: a child forked from it writes nothing

void write_at_exit() {
  // A forked child (os.fork() after init) holds a stale copy of the parent's events, and the
  // parent's thread may have held the recorder's lock at the fork: the file is the parent's.
  if (getpid() != g_writer) return;
  try {
    write();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringdp: RINGDP_TIMELINE: %s\n", e.what());
    std::fflush(nullptr);
    std::_Exit(1);
  }
}

// Nanoseconds as the microseconds, to the nanosecond, that trace viewers read.
std::string microseconds(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns) / 1e3);
  return text;
}

const char* row_name(int row) {
  switch (static_cast<Row>(row)) {
    case Row::main: return "main: backward, hooks, waits";
    case Row::buckets: return "buckets in flight";
    case Row::comm: return "comm worker: collectives and steps";
  }
  return "other";
}
}  // namespace

std::string path_for_rank(const std::string& base, int rank) {
  const std::string suffix = ".rank" + std::to_string(rank);
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0)
    return base.substr(0, base.size() - 5) + suffix + ".json";
  return base + suffix + ".json";
}

void start_from_environment(int rank) {
  const auto base = settings::text(settings::Id::timeline);
  if (!base || enabled()) return;
  // Checked as the communicator starts: the trace is written at exit, after all the work.
  require_output_folder(*base, "RINGDP_TIMELINE");
  start(path_for_rank(*base, rank), rank);
}

void start(const std::string& path, int rank) {
  Recorder& r = recorder();
  {
    std::lock_guard lock(r.mutex);
    r.path = path;
    r.rank = rank;
    r.events.clear();
    r.written = false;
    g_writer = getpid();
    if (!r.exit_hook) {
      std::atexit(write_at_exit);
      r.exit_hook = true;
    }
  }
  detail::g_enabled.store(true, std::memory_order_relaxed);
}

void stop() {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  detail::g_enabled.store(false, std::memory_order_relaxed);
  r.events.clear();
  r.path.clear();
}

void set_thread_row(Row row) { t_row = row; }
Row thread_row() { return t_row; }

void complete(const char* category, std::string name, Clock::time_point begin, Clock::time_point end, Row row,
              std::string args_json) {
  if (!enabled()) return;
  push(Event{'X', category, std::move(name), ns(begin), ns(end) - ns(begin), static_cast<int>(row), 0,
             std::move(args_json)});
}

void async_interval(const char* category, std::string name, int id, Clock::time_point begin,
                    Clock::time_point end, Row row, std::string args_json) {
  if (!enabled()) return;
  push(Event{'b', category, name, ns(begin), 0, static_cast<int>(row), id, std::move(args_json)});
  push(Event{'e', category, std::move(name), ns(end), 0, static_cast<int>(row), id, {}});
}

std::string json_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

void write() {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  if (r.path.empty() || r.written) return;
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  const std::string pid = std::to_string(r.rank);
  out += "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " + pid + ", \"args\": {\"name\": \"rank " +
         pid + "\"}}";
  for (int row = 1; row <= 3; ++row)
    out += ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + pid +
           ", \"tid\": " + std::to_string(row) + ", \"args\": {\"name\": \"" + row_name(row) + "\"}}";
  for (const Event& e : r.events) {
    out += ",\n{\"ph\": \"";
    out += e.phase;
    out += "\", \"cat\": \"" + std::string(e.category) + "\", \"name\": \"" + json_escape(e.name) +
           "\", \"pid\": " + pid + ", \"tid\": " + std::to_string(e.row) +
           ", \"ts\": " + microseconds(e.ts_ns);
    if (e.phase == 'X') out += ", \"dur\": " + microseconds(e.dur_ns);
    if (e.phase != 'X') out += ", \"id\": " + std::to_string(e.id);
    if (!e.args.empty()) out += ", \"args\": {" + e.args + "}";
    out += '}';
  }
  out += "\n]}\n";
  write_file_atomically(r.path, out, "RINGDP_TIMELINE's trace");
  r.written = true;
}

}  // namespace ringdp::timeline

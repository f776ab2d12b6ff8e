// The timeline's file (core/timeline.h): valid JSON in Chrome's trace-event format, events
// only while recording, names escaped, per-rank paths, and a clear error when it cannot be written.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "autograd/functions.h"
#include "autograd/layers.h"
#include "comm/communicator.h"
#include "core/error.h"
#include "core/timeline.h"

using namespace ringdp;
namespace fs = std::filesystem;

namespace {
nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}
// The names of the complete spans ("X" events) of one category in the trace at `path`, which
// is removed after reading.
std::multiset<std::string> span_names(const fs::path& path, const std::string& category) {
  std::multiset<std::string> names;
  const nlohmann::json trace = read_json(path);
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == category) names.insert(e["name"]);
  fs::remove(path);
  return names;
}
// Trace times are microseconds of the steady clock, printed to the nanosecond.
double micros(timeline::Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
}
constexpr double kPrinted = 0.01;  // the printed nanosecond, and a double's rounding at ~1e12 µs
fs::path scratch(const char* name) {
  return fs::temp_directory_path() /
         (std::string("ringdp-timeline-") + std::to_string(getpid()) + "-" + name);
}
}  // namespace

TEST_CASE("path_for_rank puts the rank before .json or appends it", "[timeline]") {
  REQUIRE(timeline::path_for_rank("/tmp/t.json", 2) == "/tmp/t.rank2.json");
  REQUIRE(timeline::path_for_rank("/tmp/step", 0) == "/tmp/step.rank0.json");
}

TEST_CASE("a recorded timeline is trace-event JSON with rows, spans and async intervals", "[timeline]") {
  const fs::path path = scratch("a.json");
  REQUIRE_FALSE(timeline::enabled());
  timeline::complete("x", "before start", timeline::Clock::now(), timeline::Clock::now(),
                     timeline::Row::main);
  timeline::start(path.string(), 3);
  REQUIRE(timeline::enabled());
  const auto t0 = timeline::Clock::now();
  {
    timeline::Scope span("test", "a \"quoted\" name");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const auto t1 = timeline::Clock::now();
  timeline::async_interval("bucket", "bucket 0", 0, t0, t0 + std::chrono::microseconds(250),
                           timeline::Row::buckets, "\"bytes\": 44");
  timeline::write();
  timeline::stop();
  timeline::complete("x", "after stop", timeline::Clock::now(), timeline::Clock::now(), timeline::Row::main);

  const nlohmann::json trace = read_json(path);
  fs::remove(path);
  int spans = 0, begins = 0, ends = 0, rows = 0;
  for (const auto& e : trace["traceEvents"]) {
    REQUIRE(e["pid"] == 3);
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "thread_name") ++rows;
    if (ph == "X") {
      ++spans;
      REQUIRE(e["name"] == "a \"quoted\" name");
      REQUIRE(e["tid"] == static_cast<int>(timeline::Row::main));
      // The span lies inside [t0, t1] and covers the 2 ms slept in it: a ts or dur on the wrong
      // clock, in the wrong unit, or taken at the wrong end of the scope falls outside.
      const double ts = e["ts"], dur = e["dur"];
      REQUIRE(ts >= micros(t0) - kPrinted);
      REQUIRE(ts + dur <= micros(t1) + kPrinted);
      REQUIRE(dur >= 2000.0 - kPrinted);
    }
    if (ph == "b" || ph == "e") {
      REQUIRE(e["id"] == 0);
      REQUIRE(e["ts"].get<double>() == Approx(micros(t0) + (ph == "e" ? 250.0 : 0.0)).margin(kPrinted));
      REQUIRE(e["tid"] == static_cast<int>(timeline::Row::buckets));
    }
    if (ph == "b") {
      ++begins;
      REQUIRE(e["args"]["bytes"] == 44);
    }
    if (ph == "e") ++ends;
  }
  REQUIRE(spans == 1);  // neither the event before start nor the one after stop
  REQUIRE(begins == 1);
  REQUIRE(ends == 1);
  REQUIRE(rows == 3);
}

TEST_CASE("the backward engine records one span per node", "[timeline]") {
  const fs::path path = scratch("b.json");
  timeline::start(path.string(), 0);
  autograd::Linear layer(autograd::LinearOptions(4, 2), 1);
  Tensor loss = autograd::mse_loss(layer.forward(ones({3, 4})), zeros({3, 2}));
  loss.backward();
  timeline::write();
  timeline::stop();
  const std::multiset<std::string> names = span_names(path, "backward");
  REQUIRE(names.size() == 2);  // the loss's node and the linear layer's
  REQUIRE(names.count(*names.begin()) == 1);  // two nodes, not one twice
}

TEST_CASE("each collective is one span, MPI's own blocking ones included", "[timeline]") {
  // A blocking call of the library's own collective on host tensors takes a shorter path than the
  // others (docs/benchmarks.md); while the timeline records, it must still be recorded.
  auto comm = comm::Communicator::init();
  const fs::path path = scratch("c.json");
  timeline::start(path.string(), 0);
  Tensor t = ones({4});
  comm->all_reduce(t, ReduceOp::sum, {.algorithm = comm::Algorithm::native});
  comm->broadcast(t, 0, {.algorithm = comm::Algorithm::native});
  comm->all_reduce(t, ReduceOp::sum, {.algorithm = comm::Algorithm::ring});
  timeline::write();
  timeline::stop();
  REQUIRE(span_names(path, "collective") ==
          std::multiset<std::string>{"all_reduce #0 native", "broadcast #1 native", "all_reduce #2 ring"});
}

TEST_CASE("a timeline that cannot be written names its path", "[timeline]") {
  timeline::start("/nonexistent-folder/t.rank0.json", 0);
  { timeline::Scope span("test", "one"); }
  REQUIRE_THROWS_WITH(timeline::write(), Catch::Contains("/nonexistent-folder/t.rank0.json"));
  timeline::stop();
}

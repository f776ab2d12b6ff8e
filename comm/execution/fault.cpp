// Implements comm/execution/fault.h (the contract is documented there). Tested by tests/cli/bench.sh and
// tests/cli/train.sh (every fault kind), the grammar by tests/unit/test_fault_plan.cpp.
#include "comm/execution/fault.h"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "core/settings.h"

namespace ringdp::comm {

namespace {
// The bounds keep a number from wrapping where it is stored: rank=4294967297 would otherwise
// become rank 1 and op=-1 collective 2^64 - 1, a drill aimed at the wrong place or at nothing.
int64_t parse_number(const std::string& text, const std::string& part, int64_t min, int64_t max) {
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  RINGDP_CHECK(!text.empty() && end && *end == '\0', "RINGDP_FAULT: '", part, "': '", text,
               "' is not an integer");
  RINGDP_CHECK(errno != ERANGE && value >= min && value <= max, "RINGDP_FAULT: '", part, "': '", text,
               "' is out of range (", min, " to ", max, ")");
  return value;
}
constexpr int64_t kAny = std::numeric_limits<int64_t>::max();
}  // namespace

FaultPlan FaultPlan::parse(const std::string& text) {
  FaultPlan plan;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    std::stringstream fields(item);
    std::string kind;
    std::getline(fields, kind, ':');
    Fault fault{};
    if (kind == "delay")
      fault.kind = Fault::Kind::delay;
    else if (kind == "skip")
      fault.kind = Fault::Kind::skip;
    else if (kind == "count")
      fault.kind = Fault::Kind::count;
    else if (kind == "corrupt")
      fault.kind = Fault::Kind::corrupt;
    else if (kind == "kill")
      fault.kind = Fault::Kind::kill;
    else
      RINGDP_FAIL("RINGDP_FAULT: unknown fault '", kind, "' in '", item,
                  "'; expected delay, skip, count, corrupt or kill");
    bool has_rank = false, has_op = false;
    std::string field, seen_keys = ",";
    while (std::getline(fields, field, ':')) {
      const auto eq = field.find('=');
      RINGDP_CHECK(eq != std::string::npos, "RINGDP_FAULT: '", field, "' in '", item, "' is not key=value");
      const std::string key = field.substr(0, eq), value = field.substr(eq + 1);
      // Given twice, one value would win in silence: the drill might not be the one meant.
      RINGDP_CHECK(seen_keys.find("," + key + ",") == std::string::npos, "RINGDP_FAULT: key '", key,
                   "' given twice in '", item, "'");
      seen_keys += key + ",";
      if (key == "rank") {
        fault.rank = static_cast<int>(parse_number(value, item, 0, std::numeric_limits<int>::max()));
        has_rank = true;
      } else if (key == "op") {
        fault.op = static_cast<uint64_t>(parse_number(value, item, 0, kAny));
        has_op = true;
      } else if (key == "ms")
        fault.ms = parse_number(value, item, 0, kAny);
      else if (key == "delta")
        fault.delta = parse_number(value, item, -kAny, kAny);
      else
        RINGDP_FAIL("RINGDP_FAULT: unknown key '", key, "' in '", item, "'; expected rank, op, ms or delta");
    }
    RINGDP_CHECK(has_rank && has_op, "RINGDP_FAULT: '", item, "' needs rank=R and op=K");
    RINGDP_CHECK(fault.kind != Fault::Kind::delay || fault.ms > 0, "RINGDP_FAULT: '", item,
                 "': a delay needs ms=M with M >= 1 (a delay of ", fault.ms, " ms would rehearse nothing)");
    // A collective cannot run on more elements than its tensor holds, so the count is clamped to
    // it: a positive delta would change nothing and the drill would rehearse nothing.
    RINGDP_CHECK(fault.kind != Fault::Kind::count || fault.delta < 0, "RINGDP_FAULT: '", item,
                 "': delta must be negative (a collective runs on at most its tensor's elements; delta=",
                 fault.delta, " would change nothing)");
    plan.faults_.push_back(fault);
  }
  return plan;
}

const FaultPlan& FaultPlan::from_environment() {
  static const FaultPlan plan = [] {
    const auto text = settings::text(settings::Id::fault);
    return text ? parse(*text) : FaultPlan{};
  }();
  return plan;
}

void FaultPlan::check_ranks(int size) const {
  for (const Fault& f : faults_)
    RINGDP_CHECK(f.rank < size, "RINGDP_FAULT: a fault for rank ", f.rank, ", but this job has ", size,
                 " rank", size == 1 ? "" : "s", " (0..", size - 1, "): the drill would rehearse nothing");
}

FaultAction FaultPlan::action(int rank, uint64_t op) const {
  FaultAction action;
  for (const Fault& f : faults_) {
    if (f.rank != rank || f.op != op) continue;
    switch (f.kind) {
      case Fault::Kind::kill: action.kill = true; break;
      case Fault::Kind::skip: action.skip = true; break;
      case Fault::Kind::corrupt: action.corrupt = true; break;
      case Fault::Kind::delay: action.delay_ms = f.ms; break;
      case Fault::Kind::count: action.count_delta = f.delta; break;
    }
  }
  return action;
}

}  // namespace ringdp::comm

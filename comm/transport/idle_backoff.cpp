// Implements comm/transport/idle_backoff.h. Measured by perf/wait-cost.sh (CPU during a long wait, small
// all-reduce latency, DDP's step beside busy processes).
#include "comm/transport/idle_backoff.h"

#include <algorithm>
#include <thread>

#include "core/settings.h"

namespace ringdp::comm {

namespace {
constexpr std::chrono::microseconds kMaxSleep{1000};
}  // namespace

std::chrono::microseconds spin_time() {
  static const std::chrono::microseconds spin{
      static_cast<int64_t>(settings::number(settings::Id::spin_us).value_or(50))};
  return spin;
}

IdleBackoff::IdleBackoff(bool yield_from_start) : yield_(yield_from_start) {}

bool IdleBackoff::pause_timed() {
  const Clock::time_point now = Clock::now();
  if (polls_ == kUncountedPolls) start_ = now;
  const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(now - start_);
  if (waited < spin_time()) {
    if (yield_) std::this_thread::yield();
    return false;
  }
  std::this_thread::sleep_for(std::min(kMaxSleep, waited / 32));
  return true;
}

}  // namespace ringdp::comm

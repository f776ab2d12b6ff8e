#include "comm/world/departures.h"

#include <algorithm>
#include <thread>

namespace ringdp::comm {

bool Departures::await_everyone(std::unique_lock<std::mutex>& exec_lock,
                                std::chrono::steady_clock::time_point until) {
  auto pause = std::chrono::microseconds(20);
  while (!everyone_left()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    exec_lock.unlock();
    std::this_thread::sleep_for(pause);
    exec_lock.lock();
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
  return true;
}

}  // namespace ringdp::comm

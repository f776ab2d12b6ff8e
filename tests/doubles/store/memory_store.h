// MemoryStore: comm/bootstrap/key_value_store.h's contract in one process, for the unit tests of
// the store bootstrap: what torch's c10d stores do and how they fail. A get waits for its key
// until its timeout, then raises an Error naming the key (TCPStore's wait); a set replaces the
// value and wakes the waiters; add is atomic, its key read as a decimal number (TCPStore keeps
// counters as text, so a set value and an add on one key meet as they do there). A store may be
// gone after a key is read (end_after_reading): TCPStore's server lives in rank 0's process, so
// a rank 0 that failed and exited takes it along, and every later call of a client raises.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "comm/bootstrap/key_value_store.h"
#include "core/error.h"

namespace ringdp::test {

class MemoryStore final : public comm::KeyValueStore {
 public:
  /// Once `key` has been read, every call raises, as a client's does whose server ended.
  void end_after_reading(const std::string& key) {
    std::lock_guard lock(mutex_);
    last_key_ = key;
  }

  void set(const std::string& key, const std::vector<char>& value) override {
    std::lock_guard lock(mutex_);
    check_alive();
    values_[key] = value;
    changed_.notify_all();
  }

  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mutex_);
    check_alive();
    if (!changed_.wait_for(lock, timeout, [&] { return ended_ || values_.count(key) != 0; }))
      RINGDP_FAIL("waited ", timeout.count(), " ms for key '", key, "' of the store");
    check_alive();
    if (!last_key_.empty() && key == last_key_) {
      ended_ = true;
      changed_.notify_all();  // the other waiters raise too
    }
    return values_[key];
  }

  bool has(const std::string& key) override {
    std::lock_guard lock(mutex_);
    check_alive();
    return values_.count(key) != 0;
  }

  int64_t add(const std::string& key, int64_t delta) override {
    std::lock_guard lock(mutex_);
    check_alive();
    std::vector<char>& value = values_[key];
    const int64_t sum = (value.empty() ? 0 : std::stoll(std::string(value.begin(), value.end()))) + delta;
    const std::string text = std::to_string(sum);
    value.assign(text.begin(), text.end());
    changed_.notify_all();
    return sum;
  }

 private:
  void check_alive() const {
    if (ended_) RINGDP_FAIL("the store's server is gone: Connection reset by peer");
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<char>> values_;
  std::string last_key_;  ///< "": the store never ends
  bool ended_ = false;
};

}  // namespace ringdp::test

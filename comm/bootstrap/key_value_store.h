// KeyValueStore: what a job started without MPI (torchrun, mp.spawn, a framework's launcher) hands
// ringdp to find its peers: torch's c10d Store, or any store with the same rules. comm/ knows only
// this interface (bindings/torch/torch_store.h adapts c10d's), so nothing under comm/ needs torch.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ringdp::comm {

class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  /// Publishes `value` under `key` for every process of the job; a later set replaces it (as
  /// torch's stores do: a rank's world size is set again at each init).
  virtual void set(const std::string& key, const std::vector<char>& value) = 0;
  /// The value under `key`, waiting until some process has set it; an Error naming the key once
  /// `timeout` has passed without it.
  virtual std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  /// Adds `delta` to the number under `key` (0 when unset) and returns the sum, atomically.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  /// Whether some process has set `key`, now; never waits.
  virtual bool has(const std::string& key) = 0;
};

}  // namespace ringdp::comm

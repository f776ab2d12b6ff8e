// TorchStore: ringdp's KeyValueStore (comm/bootstrap/key_value_store.h) over the c10d Store torch
// hands the backend's creator (torchrun's TCPStore, init_method's tcp:// or file:// store, each
// already scoped by torch per group). How ranks that no MPI launcher started meet: every rank
// publishes its introduction and UCX address under its own key. Tested under mp.spawn
// (tests/torch/spawn.py) and torchrun (the torch2 suite).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "comm/bootstrap/key_value_store.h"

namespace ringdp_torch {

class TorchStore final : public ringdp::comm::KeyValueStore {
 public:
  explicit TorchStore(c10::intrusive_ptr<::c10d::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::vector<char>& value) override;
  /// Waits with the store's own wait (torch's error names the key on timeout), then reads.
  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool has(const std::string& key) override;

 private:
  c10::intrusive_ptr<::c10d::Store> store_;
};

}  // namespace ringdp_torch

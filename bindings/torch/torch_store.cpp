// Implements bindings/torch/torch_store.h (the contract is documented there).
#include "bindings/torch/torch_store.h"

#include <cstdint>

#include "core/error.h"

namespace ringdp_torch {

void TorchStore::set(const std::string& key, const std::vector<char>& value) {
  try {
    store_->set(key, std::vector<uint8_t>(value.begin(), value.end()));
  } catch (const std::exception& e) {
    RINGDP_FAIL("the store torch handed ringdp refused key '", key, "': ", e.what());
  }
}

std::vector<char> TorchStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  std::vector<uint8_t> value;
  try {
    store_->wait({key}, timeout);
    value = store_->get(key);
  } catch (const std::exception& e) {
    // torch's message may run to many lines (a C++ trace): its first says what happened.
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    RINGDP_FAIL("waited ", timeout.count() / 1000.0, " s for key '", key, "' of the store: ", what);
  }
  return {value.begin(), value.end()};
}

int64_t TorchStore::add(const std::string& key, int64_t delta) {
  try {
    return store_->add(key, delta);
  } catch (const std::exception& e) {
    RINGDP_FAIL("the store torch handed ringdp refused to add to key '", key, "': ", e.what());
  }
}

bool TorchStore::has(const std::string& key) {
  try {
    return store_->check({key});
  } catch (const std::exception& e) {
    RINGDP_FAIL("the store torch handed ringdp could not say whether it has key '", key, "': ", e.what());
  }
}

}  // namespace ringdp_torch

// Implements tensor/storage.h (the contract is documented there). Tested by tests/unit/test_tensor.cpp
// (alignment).
#include "tensor/storage.h"

#include <cstdlib>
#include <new>

#include "core/error.h"
#include "kernels/device_memory.h"

namespace ringdp {

namespace {
constexpr size_t kAlignment = 64;
}

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (device.is_cpu()) {
    // aligned_alloc wants a multiple of the alignment; a zero-size tensor still gets a pointer.
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    data_ = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
    RINGDP_CHECK(data_ != nullptr, "out of host memory allocating ", bytes, " bytes");
  } else {
    data_ = kernels::cuda_malloc(bytes, device.index);
  }
}

std::shared_ptr<Storage> Storage::borrow(void* data, size_t bytes, Device device) {
  RINGDP_CHECK(data != nullptr || bytes == 0, "cannot borrow ", bytes, " bytes at a null pointer");
  std::shared_ptr<Storage> storage(new Storage(0, Device::cpu()));
  std::free(storage->data_);
  storage->data_ = data;
  storage->bytes_ = bytes;
  storage->device_ = device;
  storage->owned_ = false;
  return storage;
}

Storage::~Storage() {
  if (!owned_) return;
  if (device_.is_cpu()) {
    std::free(data_);
  } else {
    try {
      kernels::cuda_free(data_, device_.index);
    } catch (...) {
      // A destructor cannot report; the CUDA context is being torn down anyway.
    }
  }
}

}  // namespace ringdp

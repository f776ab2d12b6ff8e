// The bytes behind one or more tensors. CPU storage is 64-byte aligned (cache line, AVX-512);
// CUDA storage comes from cudaMalloc through kernels/device_memory.h. Borrowed storage is memory
// another library owns (the torch backend's at::Tensor): ringdp reads and writes it in place and
// never frees it; the owner keeps it alive while ringdp uses it.
#pragma once

#include <cstddef>
#include <memory>

#include "core/device.h"

namespace ringdp {

class Storage {
 public:
  Storage(size_t bytes, Device device);
  /// Over `bytes` at `data`, which this Storage neither allocated nor frees.
  static std::shared_ptr<Storage> borrow(void* data, size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  bool owned_ = true;
};

}  // namespace ringdp

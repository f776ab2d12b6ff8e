// Tensor: a handle to shared, contiguous, row-major storage with a shape, dtype and device.
// Copies of a Tensor alias the same data (as in PyTorch); clone() copies the data.
// The autograd slots (requires_grad, grad, grad_fn, hooks) are plain data here: tensor/ stores
// them, autograd/ gives them meaning. Tested in tests/unit/test_tensor.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "tensor/storage.h"

namespace ringdp {

namespace autograd {
struct Node;
}

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& shape);
int64_t shape_numel(const Shape& shape);

class Tensor;
/// Runs after a leaf's gradient has been accumulated during backward (the DDP seam).
using GradHook = std::function<void(Tensor&)>;

class Tensor {
 public:
  Tensor() = default;  ///< an undefined tensor; defined() is false
  Tensor(Shape shape, DType dtype, Device device = Device::cpu());  ///< uninitialised contents
  /// A tensor over contiguous memory another library owns (Storage::borrow): nothing is copied,
  /// and the owner must keep the memory alive while this tensor (or a view of it) is in use.
  static Tensor borrow(void* data, Shape shape, DType dtype, Device device = Device::cpu());

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t size(int64_t d) const;
  int64_t numel() const { return impl().numel; }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }
  /// True when both handles share one TensorImpl (the same tensor, not equal values).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  /// Identity of the underlying TensorImpl: a key for maps of tensors (the autograd engine's).
  const void* id() const { return impl_.get(); }

  void* data_ptr() const {
    const Impl& i = impl();
    return static_cast<char*>(i.storage->data()) + i.offset_bytes;
  }
  /// Typed host pointer; checks that T matches dtype() and that the tensor is on the CPU.
  template <typename T>
  T* data() const {
    check_host_access(DTypeOf<T>::value);
    return static_cast<T*>(data_ptr());
  }

  /// Element at a flat (row-major) index, as double; CPU only. For tests and printing.
  double item(int64_t flat_index = 0) const;
  /// Element at a multi-dimensional index, bounds-checked.
  double at(std::initializer_list<int64_t> index) const;
  void set_item(int64_t flat_index, double value);
  std::vector<double> to_vector() const;

  Tensor to(Device device) const;  ///< same tensor if already there, else a copy
  Tensor to(DType dtype) const;
  Tensor clone() const;
  /// Copies values from src (same shape; dtype converted; any device pair).
  void copy_from(const Tensor& src);
  /// A view sharing storage with another shape of the same numel.
  Tensor reshape(Shape shape) const;
  /// A 1-D view of elements [start, start + count) of the flattened tensor.
  Tensor flat_view(int64_t start, int64_t count) const;

  // --- autograd slots (see autograd/) -----------------------------------------------------
  bool requires_grad() const;
  Tensor& set_requires_grad(bool enabled);
  Tensor grad() const;
  void set_grad(const Tensor& grad);
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  void set_grad_fn(std::shared_ptr<autograd::Node> node);
  bool is_leaf() const { return grad_fn() == nullptr; }
  /// Runs `hook` after this leaf's gradient is accumulated, in every backward, until removed
  /// with the returned handle (PyTorch's RemovableHandle): whoever registers a hook that
  /// captures itself must remove it before it goes away.
  uint64_t register_hook(GradHook hook);
  /// Removes the hook `handle` names; nothing when it is already gone.
  void remove_hook(uint64_t handle);
  /// The hooks, in registration order, with their handles.
  const std::vector<std::pair<uint64_t, GradHook>>& hooks() const;
  /// Runs backward from this scalar (defined in autograd/engine.cpp: link ringdp_autograd).
  void backward() const;

 private:
  // Defined here, not in tensor.cpp, so the accessors above inline: a collective reads them a
  // dozen times per call, and out-of-line calls were a fifth of a small all-reduce's own cost.
  struct Impl {
    std::shared_ptr<Storage> storage;
    size_t offset_bytes = 0;
    Shape shape;
    int64_t numel = 0;  // of shape, checked once where the shape is set
    DType dtype = DType::float32;
    bool requires_grad = false;
    std::shared_ptr<Impl> grad;
    std::shared_ptr<autograd::Node> grad_fn;
    std::vector<std::pair<uint64_t, GradHook>> hooks;
  };
  explicit Tensor(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  Impl& impl() const {
    if (!impl_) fail_undefined();  // noreturn, so the compiler keeps it off the hot path
    return *impl_;
  }
  [[noreturn]] static void fail_undefined();
  void check_host_access(DType expected) const;

  std::shared_ptr<Impl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& t);

// --- factories ------------------------------------------------------------------------------
Tensor empty(Shape shape, DType dtype = DType::float32, Device device = Device::cpu());
Tensor zeros(Shape shape, DType dtype = DType::float32, Device device = Device::cpu());
Tensor ones(Shape shape, DType dtype = DType::float32, Device device = Device::cpu());
Tensor full(Shape shape, double value, DType dtype = DType::float32, Device device = Device::cpu());
/// 0, 1, ..., n-1.
Tensor arange(int64_t n, DType dtype = DType::float32, Device device = Device::cpu());
/// Uniform in [low, high), element i from philox(seed, i): the same on every machine.
Tensor rand(Shape shape, uint64_t seed, double low = 0.0, double high = 1.0, DType dtype = DType::float32,
            Device device = Device::cpu());
/// Normal(mean, std), element i from philox(seed, i) through Box-Muller.
Tensor randn(Shape shape, uint64_t seed, double mean = 0.0, double std = 1.0, DType dtype = DType::float32,
             Device device = Device::cpu());
/// A 1-D or 2-D CPU tensor from values (for tests and small data).
Tensor from_vector(const std::vector<double>& values, Shape shape, DType dtype = DType::float32);

}  // namespace ringdp

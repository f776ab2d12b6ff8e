// Implements tensor/tensor.h (the contract is documented there). Tested by tests/unit/test_tensor.cpp.
#include "tensor/tensor.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <ostream>
#include <sstream>

#include "kernels/device_memory.h"
#include "kernels/elementwise.h"
#include "tensor/random.h"

namespace ringdp {

std::string shape_str(const Shape& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t extent : shape) {
    RINGDP_CHECK(extent >= 0, "negative extent ", extent, " in shape ", shape_str(shape));
    RINGDP_CHECK(extent == 0 || n <= std::numeric_limits<int64_t>::max() / extent, "shape ", shape_str(shape),
                 " has more elements than an int64 counts");
    n *= extent;
  }
  return n;
}

Tensor::Tensor(Shape shape, DType dtype, Device device) {
  RINGDP_CHECK(shape.size() <= 8, "tensors have at most 8 dimensions, got shape ", shape_str(shape));
  const int64_t n = shape_numel(shape);
  auto impl = std::make_shared<Impl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(n) * dtype_size(dtype), device);
  impl->shape = std::move(shape);
  impl->numel = n;
  impl->dtype = dtype;
  impl_ = std::move(impl);
}

Tensor Tensor::borrow(void* data, Shape shape, DType dtype, Device device) {
  RINGDP_CHECK(shape.size() <= 8, "tensors have at most 8 dimensions, got shape ", shape_str(shape));
  const int64_t n = shape_numel(shape);
  auto impl = std::make_shared<Impl>();
  impl->storage = Storage::borrow(data, static_cast<size_t>(n) * dtype_size(dtype), device);
  impl->shape = std::move(shape);
  impl->numel = n;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

void Tensor::fail_undefined() { RINGDP_FAIL("operation on an undefined tensor"); }

int64_t Tensor::size(int64_t d) const {
  const int64_t n = dim();
  RINGDP_CHECK(d >= -n && d < n, "dimension ", d, " out of range for shape ", shape_str(shape()));
  return shape()[static_cast<size_t>(d < 0 ? d + n : d)];
}

void Tensor::check_host_access(DType expected) const {
  RINGDP_CHECK(device().is_cpu(), "host access to a tensor on ", device().str(),
               "; copy it with .to(Device::cpu()) first");
  RINGDP_CHECK(dtype() == expected, "dtype mismatch: tensor is ", dtype_name(dtype()), ", accessed as ",
               dtype_name(expected));
}

double Tensor::item(int64_t flat_index) const {
  RINGDP_CHECK(device().is_cpu(), "item() on a tensor on ", device().str());
  const int64_t n = numel();
  RINGDP_CHECK(flat_index >= 0 && flat_index < n, "index ", flat_index, " out of range for a tensor of ", n,
               " elements, shape ", shape_str(shape()));
  double value = 0;
  kernels::cast_cpu(static_cast<const char*>(data_ptr()) + flat_index * dtype_size(dtype()), dtype(), &value,
                    DType::float64, 1);
  return value;
}

double Tensor::at(std::initializer_list<int64_t> index) const {
  RINGDP_CHECK(static_cast<int64_t>(index.size()) == dim(), "index with ", index.size(),
               " coordinates for a tensor of shape ", shape_str(shape()));
  int64_t flat = 0, d = 0;
  for (int64_t i : index) {
    RINGDP_CHECK(i >= 0 && i < shape()[d], "index ", i, " out of range for dimension ", d, " of shape ",
                 shape_str(shape()));
    flat = flat * shape()[d++] + i;
  }
  return item(flat);
}

void Tensor::set_item(int64_t flat_index, double value) {
  RINGDP_CHECK(device().is_cpu(), "set_item() on a tensor on ", device().str());
  const int64_t n = numel();
  RINGDP_CHECK(flat_index >= 0 && flat_index < n, "index ", flat_index, " out of range for a tensor of ", n,
               " elements, shape ", shape_str(shape()));
  kernels::cast_cpu(&value, DType::float64, static_cast<char*>(data_ptr()) + flat_index * dtype_size(dtype()),
                    dtype(), 1);
}

std::vector<double> Tensor::to_vector() const {
  const Tensor host = to(Device::cpu());
  std::vector<double> values(static_cast<size_t>(host.numel()));
  kernels::cast_cpu(host.data_ptr(), host.dtype(), values.data(), DType::float64, host.numel());
  return values;
}

Tensor Tensor::to(Device target) const {
  if (device() == target) return *this;
  Tensor out(shape(), dtype(), target);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to(DType target) const {
  if (dtype() == target) return *this;
  Tensor out(shape(), target, device());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out(shape(), dtype(), device());
  out.copy_from(*this);
  return out;
}

void Tensor::copy_from(const Tensor& src) {
  RINGDP_CHECK(shape() == src.shape(), "copy_from: shape mismatch: destination ", shape_str(shape()),
               ", source ", shape_str(src.shape()));
  const int64_t n = numel();
  if (n == 0) return;
  const Device from = src.device(), to_dev = device();
  if (from.is_cpu() && to_dev.is_cpu()) {
    if (src.dtype() == dtype())
      std::memmove(data_ptr(), src.data_ptr(), nbytes());
    else
      kernels::cast_cpu(src.data_ptr(), src.dtype(), data_ptr(), dtype(), n);
    return;
  }
  if (from.is_cuda() && to_dev.is_cuda()) {
    if (src.dtype() == dtype()) {
      kernels::cuda_memcpy(data_ptr(), src.data_ptr(), nbytes(), kernels::CopyKind::device_to_device);
    } else {
      kernels::cast_cuda(src.data_ptr(), src.dtype(), data_ptr(), dtype(), n);
    }
    return;
  }
  // Host <-> device with a dtype change: convert on the host side.
  if (from.is_cpu()) {
    const Tensor staged = src.to(dtype());
    kernels::cuda_memcpy(data_ptr(), staged.data_ptr(), nbytes(), kernels::CopyKind::host_to_device);
  } else {
    Tensor staged(shape(), src.dtype(), Device::cpu());
    kernels::cuda_memcpy(staged.data_ptr(), src.data_ptr(), src.nbytes(), kernels::CopyKind::device_to_host);
    copy_from(staged);
  }
}

Tensor Tensor::reshape(Shape new_shape) const {
  const int64_t n = shape_numel(new_shape);
  RINGDP_CHECK(n == numel(), "reshape from ", shape_str(shape()), " to ", shape_str(new_shape),
               ": element counts differ");
  auto impl = std::make_shared<Impl>();
  impl->storage = impl_->storage;
  impl->offset_bytes = impl_->offset_bytes;
  impl->shape = std::move(new_shape);
  impl->numel = n;
  impl->dtype = impl_->dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::flat_view(int64_t start, int64_t count) const {
  const int64_t n = numel();
  RINGDP_CHECK(start >= 0 && count >= 0 && start + count <= n, "flat_view [", start, ", ", start + count,
               ") out of range for ", n, " elements");
  auto impl = std::make_shared<Impl>();
  impl->storage = impl_->storage;
  impl->offset_bytes = impl_->offset_bytes + static_cast<size_t>(start) * dtype_size(dtype());
  impl->shape = {count};
  impl->numel = count;
  impl->dtype = impl_->dtype;
  return Tensor(std::move(impl));
}

bool Tensor::requires_grad() const { return impl().requires_grad; }
Tensor& Tensor::set_requires_grad(bool enabled) {
  RINGDP_CHECK(!enabled || is_floating(dtype()),
               "only floating-point tensors can require "
               "gradients, got ",
               dtype_name(dtype()));
  impl().requires_grad = enabled;
  return *this;
}
Tensor Tensor::grad() const { return Tensor(impl().grad); }
void Tensor::set_grad(const Tensor& grad) { impl().grad = grad.impl_; }
const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const { return impl().grad_fn; }
void Tensor::set_grad_fn(std::shared_ptr<autograd::Node> node) { impl().grad_fn = std::move(node); }
uint64_t Tensor::register_hook(GradHook hook) {
  RINGDP_CHECK(requires_grad() && is_leaf(),
               "hooks can only be registered on leaf tensors that "
               "require grad");
  static std::atomic<uint64_t> next_handle{1};
  const uint64_t handle = next_handle++;
  impl().hooks.emplace_back(handle, std::move(hook));
  return handle;
}
void Tensor::remove_hook(uint64_t handle) {
  auto& hooks = impl().hooks;
  std::erase_if(hooks, [handle](const auto& entry) { return entry.first == handle; });
}
const std::vector<std::pair<uint64_t, GradHook>>& Tensor::hooks() const { return impl().hooks; }

std::ostream& operator<<(std::ostream& out, const Tensor& t) {
  if (!t.defined()) return out << "tensor(undefined)";
  out << "tensor([";
  const int64_t n = t.numel();
  if (t.device().is_cpu()) {
    const int64_t shown = std::min<int64_t>(n, 8);
    for (int64_t i = 0; i < shown; ++i) out << (i ? ", " : "") << t.item(i);
    if (shown < n) out << ", ...";
  } else {
    out << "...";
  }
  return out << "], shape=" << shape_str(t.shape()) << ", dtype=" << dtype_name(t.dtype())
             << ", device=" << t.device().str() << ")";
}

// --- factories ------------------------------------------------------------------------------

Tensor empty(Shape shape, DType dtype, Device device) { return Tensor(std::move(shape), dtype, device); }

Tensor full(Shape shape, double value, DType dtype, Device device) {
  Tensor t(std::move(shape), dtype, device);
  if (device.is_cpu())
    kernels::fill_cpu(t.data_ptr(), t.numel(), dtype, value);
  else
    kernels::fill_cuda(t.data_ptr(), t.numel(), dtype, value);
  return t;
}

Tensor zeros(Shape shape, DType dtype, Device device) { return full(std::move(shape), 0.0, dtype, device); }
Tensor ones(Shape shape, DType dtype, Device device) { return full(std::move(shape), 1.0, dtype, device); }

namespace {
template <typename Generate>
Tensor generate(Shape shape, DType dtype, Device device, Generate value_at) {
  Tensor host(std::move(shape), DType::float64);
  auto* values = host.data<double>();
  for (int64_t i = 0; i < host.numel(); ++i) values[i] = value_at(static_cast<uint64_t>(i));
  Tensor out(host.shape(), dtype, device);
  out.copy_from(host);
  return out;
}
}  // namespace

Tensor arange(int64_t n, DType dtype, Device device) {
  return generate({n}, dtype, device, [](uint64_t i) { return static_cast<double>(i); });
}

Tensor rand(Shape shape, uint64_t seed, double low, double high, DType dtype, Device device) {
  return generate(std::move(shape), dtype, device,
                  [=](uint64_t i) { return low + (high - low) * random::uniform(seed, i); });
}

Tensor randn(Shape shape, uint64_t seed, double mean, double std, DType dtype, Device device) {
  return generate(std::move(shape), dtype, device,
                  [=](uint64_t i) { return mean + std * random::normal(seed, i); });
}

Tensor from_vector(const std::vector<double>& values, Shape shape, DType dtype) {
  RINGDP_CHECK(shape_numel(shape) == static_cast<int64_t>(values.size()), "from_vector: ", values.size(),
               " values for shape ", shape_str(shape));
  return generate(std::move(shape), dtype, Device::cpu(), [&](uint64_t i) { return values[i]; });
}

}  // namespace ringdp

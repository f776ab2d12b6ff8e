// Implements kernels/relu.h (the contract is documented there). Tested by tests/unit/test_kernels.cpp.
#include "kernels/relu.h"

namespace ringdp::kernels {

void relu_forward_cpu(const void* x, void* y, int64_t n, DType dtype, Stream) {
  dispatch_float(dtype, "relu_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto* in = static_cast<const T*>(x);
    auto* out = static_cast<T*>(y);
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > T(0) ? in[i] : T(0);
  });
}

void relu_backward_cpu(const void* x, const void* dy, void* dx, int64_t n, DType dtype, Stream) {
  dispatch_float(dtype, "relu_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto* in = static_cast<const T*>(x);
    const auto* dout = static_cast<const T*>(dy);
    auto* dinp = static_cast<T*>(dx);
    // The subgradient at 0 is taken as 0, as PyTorch does.
    for (int64_t i = 0; i < n; ++i) dinp[i] = in[i] > T(0) ? dout[i] : T(0);
  });
}

}  // namespace ringdp::kernels

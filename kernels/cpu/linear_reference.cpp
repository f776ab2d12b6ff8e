// Plain-loop Linear: the reference every other Linear implementation is tested against.
// Accumulates in double whatever the dtype, so it is the more accurate of the two.
#include "kernels/linear.h"

namespace ringdp::kernels {

void linear_forward_reference(const void* x, const void* W, const void* b, void* y, int64_t B, int64_t C,
                              int64_t OC, DType dtype) {
  dispatch_float(dtype, "linear_forward_reference", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto* in = static_cast<const T*>(x);
    const auto* weight = static_cast<const T*>(W);
    const auto* bias = static_cast<const T*>(b);
    auto* out = static_cast<T*>(y);
    for (int64_t i = 0; i < B; ++i) {
      for (int64_t o = 0; o < OC; ++o) {
        double acc = bias ? static_cast<double>(bias[o]) : 0.0;
        for (int64_t c = 0; c < C; ++c)
          acc += static_cast<double>(in[i * C + c]) * static_cast<double>(weight[o * C + c]);
        out[i * OC + o] = static_cast<T>(acc);
      }
    }
  });
}

void linear_backward_reference(const void* dy, const void* x, const void* W, void* dx, void* dW, void* db,
                               int64_t B, int64_t C, int64_t OC, DType dtype) {
  dispatch_float(dtype, "linear_backward_reference", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto* dout = static_cast<const T*>(dy);
    const auto* in = static_cast<const T*>(x);
    const auto* weight = static_cast<const T*>(W);
    if (dx) {
      auto* dinp = static_cast<T*>(dx);
      for (int64_t i = 0; i < B; ++i)
        for (int64_t c = 0; c < C; ++c) {
          double acc = 0;
          for (int64_t o = 0; o < OC; ++o)
            acc += static_cast<double>(dout[i * OC + o]) * static_cast<double>(weight[o * C + c]);
          dinp[i * C + c] = static_cast<T>(acc);
        }
    }
    if (dW) {
      auto* dweight = static_cast<T*>(dW);
      for (int64_t o = 0; o < OC; ++o)
        for (int64_t c = 0; c < C; ++c) {
          double acc = 0;
          for (int64_t i = 0; i < B; ++i)
            acc += static_cast<double>(dout[i * OC + o]) * static_cast<double>(in[i * C + c]);
          dweight[o * C + c] = static_cast<T>(acc);
        }
    }
    if (db) {
      auto* dbias = static_cast<T*>(db);
      for (int64_t o = 0; o < OC; ++o) {
        double acc = 0;
        for (int64_t i = 0; i < B; ++i) acc += static_cast<double>(dout[i * OC + o]);
        dbias[o] = static_cast<T>(acc);
      }
    }
  });
}

}  // namespace ringdp::kernels

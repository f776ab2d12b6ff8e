// Implements kernels/elementwise.h (the contract is documented there). Tested by tests/unit/test_kernels.cpp.
#include "kernels/elementwise.h"

#include <algorithm>

#include "core/float16_bulk.h"

namespace ringdp::kernels {
void xor_byte_cpu(void* p, unsigned char mask, Stream) { *static_cast<unsigned char*>(p) ^= mask; }

void fill_cpu(void* dst, int64_t n, DType dtype, double value, Stream) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = convert_value<T>(value);
    auto* out = static_cast<T*>(dst);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  });
}

namespace {
// Elements per block when float16 goes through float32 scratch: a few KiB, kept in L1.
constexpr int64_t kBlock = 512;

// float16 × alpha as convert_value does it (widen, multiply in double, round through float), with
// the widening and the rounding done a block at a time by core/float16_bulk.h.
void scale_float16(float16* v, int64_t n, double alpha) {
  float wide[kBlock];
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t len = std::min(kBlock, n - start);
    float16_to_float(v + start, wide, len);
    for (int64_t i = 0; i < len; ++i) wide[i] = static_cast<float>(static_cast<double>(wide[i]) * alpha);
    float16_from_float(wide, v + start, len);
  }
}
}  // namespace

void cast_cpu(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n, Stream) {
  // The two casts of the fp16 communication hook, a bucket each way per step.
  if (src_dtype == DType::float32 && dst_dtype == DType::float16)
    return float16_from_float(static_cast<const float*>(src), static_cast<float16*>(dst), n);
  if (src_dtype == DType::float16 && dst_dtype == DType::float32)
    return float16_to_float(static_cast<const float16*>(src), static_cast<float*>(dst), n);
  dispatch_dtype(src_dtype, [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    dispatch_dtype(dst_dtype, [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      const auto* in = static_cast<const S*>(src);
      auto* out = static_cast<D*>(dst);
      // Direct, not via double: int64 above 2^53 keeps its precision, and convert_value gives every
      // other pair the value the route through double gave (exact widenings, one rounding).
      for (int64_t i = 0; i < n; ++i) out[i] = convert_value<D>(in[i]);
    });
  });
}

void scale_cpu(void* x, int64_t n, DType dtype, double alpha, Stream) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* v = static_cast<T*>(x);
    if constexpr (std::is_same_v<T, float>) {
      const float a = static_cast<float>(alpha);
      for (int64_t i = 0; i < n; ++i) v[i] *= a;
    } else if constexpr (std::is_same_v<T, float16>) {
      scale_float16(v, n, alpha);
    } else {
      for (int64_t i = 0; i < n; ++i) v[i] = convert_value<T>(convert_value<double>(v[i]) * alpha);
    }
  });
}

void add_cpu(const void* a, const void* b, void* out, int64_t n, DType dtype, double alpha, Stream) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto* x = static_cast<const T*>(a);
    const auto* y = static_cast<const T*>(b);
    auto* z = static_cast<T*>(out);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T s = static_cast<T>(alpha);
      for (int64_t i = 0; i < n; ++i) z[i] = x[i] + s * y[i];
    } else {
      for (int64_t i = 0; i < n; ++i)
        z[i] = convert_value<T>(convert_value<double>(x[i]) + alpha * convert_value<double>(y[i]));
    }
  });
}

}  // namespace ringdp::kernels

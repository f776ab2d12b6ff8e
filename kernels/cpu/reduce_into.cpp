// CPU reduce_into: the ring's per-step reduction. Loops are simple enough for g++ -O2 to
// vectorise the float32/float64/int sum, min and max cases.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/error.h"
#include "core/float16_bulk.h"
#include "kernels/reduce_into.h"

namespace ringdp {

namespace kernels {
namespace {

// Every op is commutative bit for bit (NaN payloads aside): IEEE sum and product already are;
// min and max are made
// so by breaking ties between +0 and −0 by sign (min gives −0, max +0) and returning one
// canonical NaN when either operand is NaN. Collective algorithms may then combine operands in
// either order and still leave every rank with identical bits.
template <typename T>
T symmetric_min(T a, T b) {
  if (a < b) return a;
  if (b < a) return b;
  if (a == b) return std::signbit(a) ? a : b;
  return std::numeric_limits<T>::quiet_NaN();
}

template <typename T>
T symmetric_max(T a, T b) {
  if (a < b) return b;
  if (b < a) return a;
  if (a == b) return std::signbit(a) ? b : a;
  return std::numeric_limits<T>::quiet_NaN();
}

// The communicator refuses bitwise ops on floating dtypes before any kernel runs; this is the
// backstop for a caller of the kernel itself.
[[noreturn]] void fail_bitwise(ReduceOp op) {
  RINGDP_FAIL("reduce op ", reduce_op_name(op), " is defined on integer dtypes only");
}

template <typename T, typename Combine>
void apply(T* __restrict dst, const T* __restrict src, int64_t count, Combine combine) {
  for (int64_t i = 0; i < count; ++i) dst[i] = combine(dst[i], src[i]);
}

template <typename T>
void reduce_typed(T* dst, const T* src, int64_t count, ReduceOp op) {
  if constexpr (std::is_integral_v<T>) {
    // Wrap-around arithmetic through the unsigned type: defined behaviour on overflow.
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg:
        return apply(dst, src, count,
                     [](T a, T b) { return static_cast<T>(static_cast<U>(a) + static_cast<U>(b)); });
      case ReduceOp::prod:
        return apply(dst, src, count,
                     [](T a, T b) { return static_cast<T>(static_cast<U>(a) * static_cast<U>(b)); });
      case ReduceOp::min: return apply(dst, src, count, [](T a, T b) { return b < a ? b : a; });
      case ReduceOp::max: return apply(dst, src, count, [](T a, T b) { return a < b ? b : a; });
      case ReduceOp::band: return apply(dst, src, count, [](T a, T b) { return static_cast<T>(a & b); });
      case ReduceOp::bor: return apply(dst, src, count, [](T a, T b) { return static_cast<T>(a | b); });
      case ReduceOp::bxor: return apply(dst, src, count, [](T a, T b) { return static_cast<T>(a ^ b); });
    }
  } else {
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg: return apply(dst, src, count, [](T a, T b) { return a + b; });
      case ReduceOp::prod: return apply(dst, src, count, [](T a, T b) { return a * b; });
      case ReduceOp::min: return apply(dst, src, count, symmetric_min<T>);
      case ReduceOp::max: return apply(dst, src, count, symmetric_max<T>);
      case ReduceOp::band:
      case ReduceOp::bor:
      case ReduceOp::bxor: fail_bitwise(op);
    }
  }
}

// float16 a block at a time through float32 scratch, widened and rounded by core/float16_bulk.h
// (the per-element conversions made a float16 all-reduce several times slower than float32's).
template <typename Combine>
void combine_float16_blocks(float16* dst, const float16* src, int64_t count, Combine combine) {
  constexpr int64_t kBlock = 512;
  float a[kBlock], b[kBlock];
  for (int64_t start = 0; start < count; start += kBlock) {
    const int64_t len = std::min(kBlock, count - start);
    float16_to_float(dst + start, a, len);
    float16_to_float(src + start, b, len);
    for (int64_t i = 0; i < len; ++i) a[i] = combine(a[i], b[i]);
    float16_from_float(a, dst + start, len);
  }
}

// bfloat16 and float16: computed in float32, rounded once per combine.
template <typename T>
void reduce_through_float(T* dst, const T* src, int64_t count, ReduceOp op) {
  auto run = [&](auto combine) {
    if constexpr (std::is_same_v<T, float16>) {
      combine_float16_blocks(dst, src, count, combine);
    } else {
      for (int64_t i = 0; i < count; ++i)
        dst[i] = T(combine(static_cast<float>(dst[i]), static_cast<float>(src[i])));
    }
  };
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return run([](float a, float b) { return a + b; });
    case ReduceOp::prod: return run([](float a, float b) { return a * b; });
    case ReduceOp::min: return run(symmetric_min<float>);
    case ReduceOp::max: return run(symmetric_max<float>);
    case ReduceOp::band:
    case ReduceOp::bor:
    case ReduceOp::bxor: fail_bitwise(op);
  }
}

// bool as NCCL and PyTorch's NCCL backend define it: sum and max are "any", prod and min are
// "all"; the bitwise ops act on the truth values. The communicator refuses avg before any kernel
// runs. Results are always 0 or 1, whatever nonzero byte came in.
void reduce_boolean(boolean* dst, const boolean* src, int64_t count, ReduceOp op) {
  auto run = [&](auto combine) {
    for (int64_t i = 0; i < count; ++i)
      dst[i].bits = static_cast<uint8_t>(combine(dst[i].bits != 0, src[i].bits != 0));
  };
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::max:
    case ReduceOp::bor: return run([](bool a, bool b) { return a || b; });
    case ReduceOp::prod:
    case ReduceOp::min:
    case ReduceOp::band: return run([](bool a, bool b) { return a && b; });
    case ReduceOp::bxor: return run([](bool a, bool b) { return a != b; });
    case ReduceOp::avg: RINGDP_FAIL("reduce op avg is not defined on bool");
  }
}

}  // namespace

void reduce_into_cpu(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op, Stream) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, boolean>) {
      reduce_boolean(static_cast<boolean*>(dst), static_cast<const boolean*>(src), count, op);
    } else if constexpr (is_float_stored_v<T>) {
      reduce_through_float(static_cast<T*>(dst), static_cast<const T*>(src), count, op);
    } else {
      reduce_typed(static_cast<T*>(dst), static_cast<const T*>(src), count, op);
    }
  });
}

}  // namespace kernels
}  // namespace ringdp

// CUDA reduce_into: grid-stride elementwise dst = dst op src on a stream.
// bfloat16 and float16 are computed in float32 and rounded to nearest even (cuda_bf16.h's and
// cuda_fp16.h's conversions); bool as kernels/reduce_into.h defines it.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/grid_stride.h"
#include "kernels/cuda/launch.h"
#include "kernels/reduce_into.h"

namespace ringdp::kernels {
namespace {

template <typename T>
__device__ T nan_of(T value) {
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(NAN);
  else
    return value;
}

template <typename T>
__device__ bool signbit(T value) {
  if constexpr (std::is_floating_point_v<T>)
    return ::signbit(value);
  else if constexpr (std::is_signed_v<T>)
    return value < 0;
  else
    return false;
}

template <typename T>
struct Combine {
  ReduceOp op;
  __device__ T operator()(T a, T b) const {
    switch (op) {
      case ReduceOp::prod: return a * b;
      // Symmetric as the CPU twin: ties between ±0 broken by sign, one canonical NaN.
      case ReduceOp::min:
        if (a < b) return a;
        if (b < a) return b;
        if (a == b) return signbit(a) ? a : b;
        return nan_of(a);
      case ReduceOp::max:
        if (a < b) return b;
        if (b < a) return a;
        if (a == b) return signbit(a) ? b : a;
        return nan_of(a);
      default: return a + b;
    }
  }
};

template <typename T, typename Storage>
__global__ void reduce_into_kernel(Storage* __restrict__ dst, const Storage* __restrict__ src,
                                   long long count, ReduceOp op) {
  const Combine<T> combine{op};
  grid_stride(count, [&](long long i) {
    if constexpr (std::is_same_v<Storage, __nv_bfloat16>) {
      dst[i] = __float2bfloat16_rn(combine(__bfloat162float(dst[i]), __bfloat162float(src[i])));
    } else if constexpr (std::is_same_v<Storage, __half>) {
      dst[i] = __float2half_rn(combine(__half2float(dst[i]), __half2float(src[i])));
    } else if constexpr (std::is_integral_v<T>) {
      // Wrap-around through the unsigned type, matching the CPU twin.
      using U = std::make_unsigned_t<T>;
      const U a = static_cast<U>(dst[i]), b = static_cast<U>(src[i]);
      dst[i] = static_cast<T>(op == ReduceOp::prod                           ? a * b
                              : (op == ReduceOp::sum || op == ReduceOp::avg) ? a + b
                              : op == ReduceOp::band                         ? a & b
                              : op == ReduceOp::bor                          ? a | b
                              : op == ReduceOp::bxor                         ? a ^ b
                                                     : static_cast<U>(combine(dst[i], src[i])));
    } else {
      dst[i] = combine(dst[i], src[i]);
    }
  });
}

// One byte per bool, read as nonzero-is-true; the result is always 0 or 1.
__global__ void reduce_bool_kernel(unsigned char* __restrict__ dst, const unsigned char* __restrict__ src,
                                   long long count, ReduceOp op) {
  grid_stride(count, [&](long long i) {
    const bool a = dst[i] != 0, b = src[i] != 0;
    const bool any = op == ReduceOp::sum || op == ReduceOp::max || op == ReduceOp::bor;
    dst[i] = op == ReduceOp::bxor ? a != b : any ? a || b : a && b;
  });
}

void launch_bool(void* dst, const void* src, int64_t count, ReduceOp op, Stream stream) {
  const unsigned block = 256;
  RINGDP_LAUNCH(grid_for(count, block), block, 0, static_cast<cudaStream_t>(stream), reduce_bool_kernel)
  (static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), count, op);
  RINGDP_CUDA_CHECK_LAUNCH(reduce_bool_kernel);
}

template <typename T, typename Storage>
void launch(void* dst, const void* src, int64_t count, ReduceOp op, Stream stream) {
  const unsigned block = 256;
  RINGDP_LAUNCH(grid_for(count, block), block, 0, static_cast<cudaStream_t>(stream),
                reduce_into_kernel<T, Storage>)
  (static_cast<Storage*>(dst), static_cast<const Storage*>(src), count, op);
  RINGDP_CUDA_CHECK_LAUNCH(reduce_into_kernel);
}

}  // namespace

void reduce_into_cuda(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op, Stream stream) {
  // As the CPU twin: the device code has no bitwise op on floats (it would add them).
  RINGDP_CHECK(!is_bitwise(op) || !is_floating(dtype), "reduce op ", reduce_op_name(op),
               " is defined on integer dtypes only");
  RINGDP_CHECK(dtype != DType::boolean || op != ReduceOp::avg, "reduce op avg is not defined on bool");
  if (count == 0) return;
  switch (dtype) {
    case DType::float32: return launch<float, float>(dst, src, count, op, stream);
    case DType::float64: return launch<double, double>(dst, src, count, op, stream);
    case DType::int32: return launch<int32_t, int32_t>(dst, src, count, op, stream);
    case DType::int64: return launch<int64_t, int64_t>(dst, src, count, op, stream);
    case DType::bfloat16: return launch<float, __nv_bfloat16>(dst, src, count, op, stream);
    case DType::float16: return launch<float, __half>(dst, src, count, op, stream);
    case DType::int8: return launch<int8_t, int8_t>(dst, src, count, op, stream);
    case DType::uint8: return launch<uint8_t, uint8_t>(dst, src, count, op, stream);
    case DType::boolean: return launch_bool(dst, src, count, op, stream);
  }
}

}  // namespace ringdp::kernels

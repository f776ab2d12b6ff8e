// CUDA fill, cast, scale and add: grid-stride elementwise kernels computed in double (or
// float for bfloat16 and float16), matching the CPU twins in kernels/cpu/elementwise.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/grid_stride.h"
#include "kernels/cuda/launch.h"
#include "kernels/elementwise.h"

namespace ringdp::kernels {
namespace {

// bool's storage on the device: one byte read as nonzero-is-true, so a corrupt byte is a wrong
// value rather than the undefined behaviour a C++ bool holding 2 would be.
struct DeviceBool {
  unsigned char bits;
};

template <typename T>
__device__ double load(const T* p, long long i) {
  return static_cast<double>(p[i]);
}
template <>
__device__ double load(const __nv_bfloat16* p, long long i) {
  return __bfloat162float(p[i]);
}
template <>
__device__ double load(const __half* p, long long i) {
  return __half2float(p[i]);
}
template <>
__device__ double load(const DeviceBool* p, long long i) {
  return p[i].bits != 0 ? 1.0 : 0.0;
}
// Integers narrower than 64 bits through long long, as the CPU twin (core/dtype.h's
// convert_value): out of range wraps, where a direct cast would saturate in PTX and be undefined
// in C++.
template <typename T>
__device__ void store(T* p, long long i, double v) {
  if constexpr (std::is_integral_v<T> && sizeof(T) < 8)
    p[i] = static_cast<T>(static_cast<long long>(v));
  else
    p[i] = static_cast<T>(v);
}
template <>
__device__ void store(__nv_bfloat16* p, long long i, double v) {
  p[i] = __float2bfloat16_rn(static_cast<float>(v));
}
template <>
__device__ void store(__half* p, long long i, double v) {
  p[i] = __float2half_rn(static_cast<float>(v));
}
template <>
__device__ void store(DeviceBool* p, long long i, double v) {
  p[i].bits = v != 0.0 ? 1 : 0;  // as the CPU twin: nonzero (NaN included) is true
}

template <typename T>
__global__ void fill_kernel(T* dst, long long n, double value) {
  grid_stride(n, [&](long long i) { store(dst, i, value); });
}
template <typename S, typename D>
__global__ void cast_kernel(const S* src, D* dst, long long n) {
  grid_stride(n, [&](long long i) { store(dst, i, load(src, i)); });
}
template <typename T>
__global__ void scale_kernel(T* x, long long n, double alpha) {
  grid_stride(n, [&](long long i) { store(x, i, load(x, i) * alpha); });
}
template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* out, long long n, double alpha) {
  grid_stride(n, [&](long long i) { store(out, i, load(a, i) + alpha * load(b, i)); });
}

template <typename Fn>
void with_storage_type(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::float32: return fn(static_cast<float*>(nullptr));
    case DType::float64: return fn(static_cast<double*>(nullptr));
    case DType::int32: return fn(static_cast<int32_t*>(nullptr));
    case DType::int64: return fn(static_cast<int64_t*>(nullptr));
    case DType::bfloat16: return fn(static_cast<__nv_bfloat16*>(nullptr));
    case DType::float16: return fn(static_cast<__half*>(nullptr));
    case DType::int8: return fn(static_cast<int8_t*>(nullptr));
    case DType::uint8: return fn(static_cast<uint8_t*>(nullptr));
    case DType::boolean: return fn(static_cast<DeviceBool*>(nullptr));
  }
}

constexpr unsigned kBlock = 256;

__global__ void xor_byte_kernel(unsigned char* p, unsigned char mask) { *p ^= mask; }

}  // namespace

void xor_byte_cuda(void* p, unsigned char mask, Stream stream) {
  RINGDP_LAUNCH(1, 1, 0, static_cast<cudaStream_t>(stream), xor_byte_kernel)
  (static_cast<unsigned char*>(p), mask);
  RINGDP_CUDA_CHECK_LAUNCH(xor_byte_kernel);
}

void fill_cuda(void* dst, int64_t n, DType dtype, double value, Stream stream) {
  if (n == 0) return;
  with_storage_type(dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    RINGDP_LAUNCH(grid_for(n, kBlock), kBlock, 0, static_cast<cudaStream_t>(stream), fill_kernel<T>)
    (static_cast<T*>(dst), n, value);
    RINGDP_CUDA_CHECK_LAUNCH(fill_kernel);
  });
}

void cast_cuda(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n, Stream stream) {
  if (n == 0) return;
  with_storage_type(src_dtype, [&](auto* src_tag) {
    using S = std::remove_pointer_t<decltype(src_tag)>;
    with_storage_type(dst_dtype, [&](auto* dst_tag) {
      using D = std::remove_pointer_t<decltype(dst_tag)>;
      RINGDP_LAUNCH(grid_for(n, kBlock), kBlock, 0, static_cast<cudaStream_t>(stream), cast_kernel<S, D>)
      (static_cast<const S*>(src), static_cast<D*>(dst), n);
      RINGDP_CUDA_CHECK_LAUNCH(cast_kernel);
    });
  });
}

void scale_cuda(void* x, int64_t n, DType dtype, double alpha, Stream stream) {
  if (n == 0) return;
  with_storage_type(dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    RINGDP_LAUNCH(grid_for(n, kBlock), kBlock, 0, static_cast<cudaStream_t>(stream), scale_kernel<T>)
    (static_cast<T*>(x), n, alpha);
    RINGDP_CUDA_CHECK_LAUNCH(scale_kernel);
  });
}

void add_cuda(const void* a, const void* b, void* out, int64_t n, DType dtype, double alpha, Stream stream) {
  if (n == 0) return;
  with_storage_type(dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    RINGDP_LAUNCH(grid_for(n, kBlock), kBlock, 0, static_cast<cudaStream_t>(stream), add_kernel<T>)
    (static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), n, alpha);
    RINGDP_CUDA_CHECK_LAUNCH(add_kernel);
  });
}

}  // namespace ringdp::kernels

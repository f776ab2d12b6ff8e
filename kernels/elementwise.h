// Elementwise helpers the tensor layer needs: fill, cast between dtypes, scale, add.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ringdp::kernels {

/// dst[i] = value (converted to dtype).
void fill_cpu(void* dst, int64_t n, DType dtype, double value, Stream stream = nullptr);
void fill_cuda(void* dst, int64_t n, DType dtype, double value, Stream stream = nullptr);

/// dst[i] = (dst_dtype) src[i]; float to integer truncates toward zero, as static_cast does.
void cast_cpu(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n,
              Stream stream = nullptr);
void cast_cuda(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n,
               Stream stream = nullptr);

/// x[i] *= alpha (integers: multiplied in double and truncated).
void scale_cpu(void* x, int64_t n, DType dtype, double alpha, Stream stream = nullptr);
void scale_cuda(void* x, int64_t n, DType dtype, double alpha, Stream stream = nullptr);

/// out[i] = a[i] + alpha · b[i]; out may alias a or b.
void add_cpu(const void* a, const void* b, void* out, int64_t n, DType dtype, double alpha,
             Stream stream = nullptr);
void add_cuda(const void* a, const void* b, void* out, int64_t n, DType dtype, double alpha,
              Stream stream = nullptr);

/// p[0] ^= mask: one byte, in stream order (the corrupt fault of comm/execution/fault.h).
void xor_byte_cpu(void* p, unsigned char mask, Stream stream = nullptr);
void xor_byte_cuda(void* p, unsigned char mask, Stream stream = nullptr);

}  // namespace ringdp::kernels

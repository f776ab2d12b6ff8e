// ReLU on raw buffers: y = max(x, 0); dx = dy where x > 0, else 0.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ringdp::kernels {

void relu_forward_cpu(const void* x, void* y, int64_t n, DType dtype, Stream stream = nullptr);
void relu_forward_cuda(const void* x, void* y, int64_t n, DType dtype, Stream stream = nullptr);

void relu_backward_cpu(const void* x, const void* dy, void* dx, int64_t n, DType dtype,
                       Stream stream = nullptr);
void relu_backward_cuda(const void* x, const void* dy, void* dx, int64_t n, DType dtype,
                        Stream stream = nullptr);

}  // namespace ringdp::kernels

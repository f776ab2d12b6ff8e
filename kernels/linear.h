// Linear layer on raw row-major buffers. Shapes: B = batch, C = in_features, OC = out_features.
//   forward:  y[B,OC] = x[B,C] · W[OC,C]ᵀ + b[OC]
//   backward: dx[B,C] = dy[B,OC] · W[OC,C];  dW[OC,C] = dyᵀ · x;  db[OC] = Σ_b dy[b,:]
// b, dx, dW and db may be null (no bias / gradient not wanted). Outputs are overwritten.
// float32 and float64. The _cpu variants use OpenBLAS; the _reference variants are plain loops
// that the tests hold the others to.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ringdp::kernels {

void linear_forward_cpu(const void* x, const void* W, const void* b, void* y, int64_t B, int64_t C,
                        int64_t OC, DType dtype, Stream stream = nullptr);
void linear_forward_cuda(const void* x, const void* W, const void* b, void* y, int64_t B, int64_t C,
                         int64_t OC, DType dtype, Stream stream = nullptr);
void linear_forward_reference(const void* x, const void* W, const void* b, void* y, int64_t B, int64_t C,
                              int64_t OC, DType dtype);

void linear_backward_cpu(const void* dy, const void* x, const void* W, void* dx, void* dW, void* db,
                         int64_t B, int64_t C, int64_t OC, DType dtype, Stream stream = nullptr);
void linear_backward_cuda(const void* dy, const void* x, const void* W, void* dx, void* dW, void* db,
                          int64_t B, int64_t C, int64_t OC, DType dtype, Stream stream = nullptr);
void linear_backward_reference(const void* dy, const void* x, const void* W, void* dx, void* dW, void* db,
                               int64_t B, int64_t C, int64_t OC, DType dtype);

}  // namespace ringdp::kernels

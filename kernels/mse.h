// Mean squared error on raw buffers of n elements.
//   forward:  loss = Σ (pred − target)² (sum), divided by n (mean); written to loss[0]
//   backward: dpred = dloss · 2 (pred − target) (sum), divided by n (mean)
// The forward sums in float64 in index order, so the same inputs always give the same bits.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ringdp::kernels {

enum class Reduction : uint8_t { mean, sum };

void mse_forward_cpu(const void* pred, const void* target, void* loss, int64_t n, DType dtype,
                     Reduction reduction, Stream stream = nullptr);
void mse_forward_cuda(const void* pred, const void* target, void* loss, int64_t n, DType dtype,
                      Reduction reduction, Stream stream = nullptr);

/// dloss points to the scalar upstream gradient (one element of dtype).
void mse_backward_cpu(const void* pred, const void* target, const void* dloss, void* dpred, int64_t n,
                      DType dtype, Reduction reduction, Stream stream = nullptr);
void mse_backward_cuda(const void* pred, const void* target, const void* dloss, void* dpred, int64_t n,
                       DType dtype, Reduction reduction, Stream stream = nullptr);

}  // namespace ringdp::kernels

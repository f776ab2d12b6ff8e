// Differentiable functions: each computes with tensor/ops (so CPU and CUDA tensors alike) and
// records a Node whose backward uses the matching backward op.
#pragma once

#include "kernels/mse.h"
#include "tensor/tensor.h"

namespace ringdp::autograd {

using kernels::Reduction;

/// y = x·Wᵀ + b with x [B, in], W [out, in], b [out] (b may be undefined).
Tensor linear(const Tensor& x, const Tensor& W, const Tensor& b = Tensor());
/// Mean (default) or sum of squared differences; shapes must match exactly (no broadcasting,
/// which is how the seed's (100,1)-vs-(100,10) mistake went unnoticed).
Tensor mse_loss(const Tensor& pred, const Tensor& target, Reduction reduction = Reduction::mean);
Tensor relu(const Tensor& x);
/// a + b, same shapes.
Tensor add(const Tensor& a, const Tensor& b);

}  // namespace ringdp::autograd

// The handful of tensor operations the core uses, each checking its operands (shape, dtype,
// device, with both values named on a mismatch) and dispatching by device to kernels/.
#pragma once

#include "kernels/adam.h"
#include "kernels/mse.h"
#include "kernels/reduce_into.h"
#include "kernels/sgd.h"
#include "tensor/tensor.h"

namespace ringdp::ops {

/// Throws unless a and b share dtype and device; `what` names the operation in the message.
void check_same_kind(const Tensor& a, const Tensor& b, const char* what);
void check_same_shape(const Tensor& a, const Tensor& b, const char* what);

Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0);  ///< a + alpha·b
void add_(Tensor& a, const Tensor& b, double alpha = 1.0);  ///< a += alpha·b
/// t *= alpha; a CUDA tensor's on `stream` (null: the legacy default stream).
void scale_(Tensor& t, double alpha, Stream stream = nullptr);
void fill_(Tensor& t, double value);

/// y[B,OC] = x[B,C]·W[OC,C]ᵀ + b[OC]; b may be undefined.
Tensor linear_forward(const Tensor& x, const Tensor& W, const Tensor& b);
struct LinearGrads {
  Tensor dx, dW, db;
};
LinearGrads linear_backward(const Tensor& dy, const Tensor& x, const Tensor& W, bool need_dx, bool need_dW,
                            bool need_db);

Tensor mse_forward(const Tensor& pred, const Tensor& target, kernels::Reduction reduction);
Tensor mse_backward(const Tensor& pred, const Tensor& target, const Tensor& dloss,
                    kernels::Reduction reduction);

Tensor relu_forward(const Tensor& x);
Tensor relu_backward(const Tensor& x, const Tensor& dy);

void sgd_step_(Tensor& param, const Tensor& grad, Tensor* momentum_buf, const kernels::SgdStep& step);
/// One Adam/AdamW step (kernels/adam.h); exp_avg and exp_avg_sq shaped and typed as param.
void adam_step_(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                const kernels::AdamStep& step);

/// dst = dst op src, elementwise over the whole tensors (the collectives use raw pointers).
void reduce_into_(Tensor& dst, const Tensor& src, ReduceOp op);

}  // namespace ringdp::ops

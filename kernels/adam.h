// One Adam or AdamW step on a parameter buffer, with PyTorch 1.13's rules (torch.optim.Adam and
// torch.optim.AdamW, their single-tensor path), t the step number counted from 1:
//   AdamW only: param ·= 1 − lr·weight_decay                (decoupled weight decay)
//   Adam only:  g = grad + weight_decay · param              (L2, folded into the gradient)
//   exp_avg    = beta1 · exp_avg    + (1 − beta1) · g
//   exp_avg_sq = beta2 · exp_avg_sq + (1 − beta2) · g · g
//   denom = sqrt(exp_avg_sq) / sqrt(1 − beta2^t) + eps       (eps after the bias-corrected sqrt)
//   param −= lr / (1 − beta1^t) · exp_avg / denom
// The per-step scalars (bias corrections, step size, 1 − beta) are computed in double on the host
// and rounded once to the buffer's dtype, as PyTorch does with its Python floats; the per-element
// arithmetic is in the dtype, in PyTorch's order. Each element's update depends on that element
// alone, which is what lets ZeRO step any contiguous slice of a flat buffer (comm/ddp/
// zero_redundancy_optimizer.h). exp_avg and exp_avg_sq start at zero (the caller's job).
// AMSGrad is not offered: optim::Adam refuses it.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ringdp::kernels {

struct AdamStep {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled = false;  ///< AdamW: weight decay shrinks the parameter instead of joining g
  int64_t step = 1;  ///< t, this step's number: 1 on the first step
};

/// The host-side scalars of one step, in double (rounded to the dtype by the kernels).
struct AdamScalars {
  double one_minus_beta1, one_minus_beta2, bias_correction2_sqrt, neg_step_size, decay_factor;
};
AdamScalars adam_scalars(const AdamStep& step);

void adam_step_cpu(void* param, const void* grad, void* exp_avg, void* exp_avg_sq, int64_t n, DType dtype,
                   const AdamStep& step, Stream stream = nullptr);
void adam_step_cuda(void* param, const void* grad, void* exp_avg, void* exp_avg_sq, int64_t n, DType dtype,
                    const AdamStep& step, Stream stream = nullptr);

}  // namespace ringdp::kernels

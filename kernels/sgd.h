// One SGD step on a parameter buffer, with PyTorch's rules (torch.optim.SGD):
//   g = grad + weight_decay · param
//   if momentum != 0: buf = g on the first step, else buf = momentum · buf + (1 − dampening) · g
//                     g = nesterov ? g + momentum · buf : buf
//   param −= lr · g
// momentum_buf may be null when momentum is 0.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ringdp::kernels {

struct SgdStep {
  double lr = 0.01;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool first_step = true;  ///< the momentum buffer is initialised, not updated
};

void sgd_step_cpu(void* param, const void* grad, void* momentum_buf, int64_t n, DType dtype,
                  const SgdStep& step, Stream stream = nullptr);
void sgd_step_cuda(void* param, const void* grad, void* momentum_buf, int64_t n, DType dtype,
                   const SgdStep& step, Stream stream = nullptr);

}  // namespace ringdp::kernels

// CUDA entry points whose hand-written kernels have not landed yet (issue 6: Linear, MSE,
// ReLU, SGD). They exist so tensor/ links and dispatches; calling one is a clear error.
#include "kernels/linear.h"
#include "kernels/mse.h"
#include "kernels/relu.h"
#include "kernels/sgd.h"

namespace ringdp::kernels {
namespace {
[[noreturn]] void pending(const char* op) {
  RINGDP_FAIL(op, " has no CUDA kernel yet in this build of ringdp; use --device cpu");
}
}  // namespace

void linear_forward_cuda(const void*, const void*, const void*, void*, int64_t, int64_t, int64_t, DType, Stream) { pending("linear_forward"); }
void linear_backward_cuda(const void*, const void*, const void*, void*, void*, void*, int64_t, int64_t, int64_t, DType, Stream) { pending("linear_backward"); }
void mse_forward_cuda(const void*, const void*, void*, int64_t, DType, Reduction, Stream) { pending("mse_forward"); }
void mse_backward_cuda(const void*, const void*, const void*, void*, int64_t, DType, Reduction, Stream) { pending("mse_backward"); }
void relu_forward_cuda(const void*, void*, int64_t, DType, Stream) { pending("relu_forward"); }
void relu_backward_cuda(const void*, const void*, void*, int64_t, DType, Stream) { pending("relu_backward"); }
void sgd_step_cuda(void*, const void*, void*, int64_t, DType, const SgdStep&, Stream) { pending("sgd_step"); }

}  // namespace ringdp::kernels

// Implements tensor/ops.h (the contract is documented there). Tested by tests/unit/ (tensor, autograd) and
// tests/cuda/.
#include "tensor/ops.h"

#include "kernels/elementwise.h"
#include "kernels/linear.h"
#include "kernels/relu.h"

namespace ringdp::ops {

// Calls name_cpu(args...) or name_cuda(args...) by the device of `on`.
#define RINGDP_ON_DEVICE(on, name, ...)  \
  do {                                   \
    if ((on).device().is_cpu())          \
      kernels::name##_cpu(__VA_ARGS__);  \
    else                                 \
      kernels::name##_cuda(__VA_ARGS__); \
  } while (0)

void check_same_kind(const Tensor& a, const Tensor& b, const char* what) {
  RINGDP_CHECK(a.dtype() == b.dtype(), what, ": dtype mismatch: ", dtype_name(a.dtype()), " vs ",
               dtype_name(b.dtype()));
  RINGDP_CHECK(a.device() == b.device(), what, ": device mismatch: ", a.device().str(), " vs ",
               b.device().str());
}

void check_same_shape(const Tensor& a, const Tensor& b, const char* what) {
  RINGDP_CHECK(a.shape() == b.shape(), what, ": shape mismatch: ", shape_str(a.shape()), " vs ",
               shape_str(b.shape()));
}

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  check_same_kind(a, b, "add");
  check_same_shape(a, b, "add");
  Tensor out(a.shape(), a.dtype(), a.device());
  RINGDP_ON_DEVICE(a, add, a.data_ptr(), b.data_ptr(), out.data_ptr(), a.numel(), a.dtype(), alpha, nullptr);
  return out;
}

void add_(Tensor& a, const Tensor& b, double alpha) {
  check_same_kind(a, b, "add_");
  check_same_shape(a, b, "add_");
  RINGDP_ON_DEVICE(a, add, a.data_ptr(), b.data_ptr(), a.data_ptr(), a.numel(), a.dtype(), alpha, nullptr);
}

void scale_(Tensor& t, double alpha, Stream stream) {
  RINGDP_ON_DEVICE(t, scale, t.data_ptr(), t.numel(), t.dtype(), alpha, stream);
}

void fill_(Tensor& t, double value) {
  RINGDP_ON_DEVICE(t, fill, t.data_ptr(), t.numel(), t.dtype(), value, nullptr);
}

Tensor linear_forward(const Tensor& x, const Tensor& W, const Tensor& b) {
  RINGDP_CHECK(x.dim() == 2 && W.dim() == 2 && x.size(1) == W.size(1), "linear: input shape ",
               shape_str(x.shape()), " does not match weight shape ", shape_str(W.shape()),
               " (expected input [B, ", W.dim() == 2 ? W.size(1) : -1, "])");
  check_same_kind(x, W, "linear (input, weight)");
  const int64_t B = x.size(0), C = x.size(1), OC = W.size(0);
  if (b.defined()) {
    check_same_kind(x, b, "linear (input, bias)");
    RINGDP_CHECK(b.dim() == 1 && b.size(0) == OC, "linear: bias shape ", shape_str(b.shape()),
                 " does not match weight shape ", shape_str(W.shape()), " (expected [", OC, "])");
  }
  Tensor y({B, OC}, x.dtype(), x.device());
  RINGDP_ON_DEVICE(x, linear_forward, x.data_ptr(), W.data_ptr(), b.defined() ? b.data_ptr() : nullptr,
                   y.data_ptr(), B, C, OC, x.dtype(), nullptr);
  return y;
}

LinearGrads linear_backward(const Tensor& dy, const Tensor& x, const Tensor& W, bool need_dx, bool need_dW,
                            bool need_db) {
  const int64_t B = x.size(0), C = x.size(1), OC = W.size(0);
  RINGDP_CHECK(dy.dim() == 2 && dy.size(0) == B && dy.size(1) == OC, "linear backward: gradient shape ",
               shape_str(dy.shape()), ", expected [", B, ", ", OC, "]");
  LinearGrads grads;
  if (need_dx) grads.dx = Tensor({B, C}, x.dtype(), x.device());
  if (need_dW) grads.dW = Tensor({OC, C}, x.dtype(), x.device());
  if (need_db) grads.db = Tensor({OC}, x.dtype(), x.device());
  auto ptr = [](const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; };
  RINGDP_ON_DEVICE(x, linear_backward, dy.data_ptr(), x.data_ptr(), W.data_ptr(), ptr(grads.dx),
                   ptr(grads.dW), ptr(grads.db), B, C, OC, x.dtype(), nullptr);
  return grads;
}

Tensor mse_forward(const Tensor& pred, const Tensor& target, kernels::Reduction reduction) {
  RINGDP_CHECK(pred.shape() == target.shape(), "mse_loss: prediction shape ", shape_str(pred.shape()),
               " does not match target shape ", shape_str(target.shape()));
  check_same_kind(pred, target, "mse_loss");
  Tensor loss({}, pred.dtype(), pred.device());
  RINGDP_ON_DEVICE(pred, mse_forward, pred.data_ptr(), target.data_ptr(), loss.data_ptr(), pred.numel(),
                   pred.dtype(), reduction, nullptr);
  return loss;
}

Tensor mse_backward(const Tensor& pred, const Tensor& target, const Tensor& dloss,
                    kernels::Reduction reduction) {
  Tensor dpred(pred.shape(), pred.dtype(), pred.device());
  RINGDP_ON_DEVICE(pred, mse_backward, pred.data_ptr(), target.data_ptr(), dloss.data_ptr(), dpred.data_ptr(),
                   pred.numel(), pred.dtype(), reduction, nullptr);
  return dpred;
}

Tensor relu_forward(const Tensor& x) {
  Tensor y(x.shape(), x.dtype(), x.device());
  RINGDP_ON_DEVICE(x, relu_forward, x.data_ptr(), y.data_ptr(), x.numel(), x.dtype(), nullptr);
  return y;
}

Tensor relu_backward(const Tensor& x, const Tensor& dy) {
  check_same_shape(x, dy, "relu backward");
  Tensor dx(x.shape(), x.dtype(), x.device());
  RINGDP_ON_DEVICE(x, relu_backward, x.data_ptr(), dy.data_ptr(), dx.data_ptr(), x.numel(), x.dtype(),
                   nullptr);
  return dx;
}

void sgd_step_(Tensor& param, const Tensor& grad, Tensor* momentum_buf, const kernels::SgdStep& step) {
  check_same_kind(param, grad, "sgd step");
  check_same_shape(param, grad, "sgd step");
  void* buf = momentum_buf ? momentum_buf->data_ptr() : nullptr;
  RINGDP_ON_DEVICE(param, sgd_step, param.data_ptr(), grad.data_ptr(), buf, param.numel(), param.dtype(),
                   step, nullptr);
}

void adam_step_(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                const kernels::AdamStep& step) {
  check_same_kind(param, grad, "adam step");
  check_same_shape(param, grad, "adam step");
  check_same_kind(param, exp_avg, "adam step");
  check_same_shape(param, exp_avg, "adam step");
  check_same_kind(param, exp_avg_sq, "adam step");
  check_same_shape(param, exp_avg_sq, "adam step");
  RINGDP_ON_DEVICE(param, adam_step, param.data_ptr(), grad.data_ptr(), exp_avg.data_ptr(),
                   exp_avg_sq.data_ptr(), param.numel(), param.dtype(), step, nullptr);
}

void reduce_into_(Tensor& dst, const Tensor& src, ReduceOp op) {
  check_same_kind(dst, src, "reduce_into");
  check_same_shape(dst, src, "reduce_into");
  RINGDP_ON_DEVICE(dst, reduce_into, dst.data_ptr(), src.data_ptr(), dst.numel(), dst.dtype(), op, nullptr);
}

}  // namespace ringdp::ops

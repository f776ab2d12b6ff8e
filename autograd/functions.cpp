// Implements autograd/functions.h (the contract is documented there). Tested by tests/unit/test_autograd.cpp
// (finite differences).
#include "autograd/functions.h"

#include "autograd/node.h"
#include "tensor/ops.h"

namespace ringdp::autograd {

namespace {

struct LinearBackward final : Node {
  Tensor x, W;  // saved
  std::vector<Tensor> backward(const Tensor& dy) override {
    const bool has_bias = inputs[2].defined();
    auto grads = ops::linear_backward(dy, x, W, inputs[0].requires_grad(), inputs[1].requires_grad(),
                                      has_bias && inputs[2].requires_grad());
    return {grads.dx, grads.dW, grads.db};
  }
  const char* name() const override { return "LinearBackward"; }
  void release_saved() override { x = W = Tensor(); }
};

struct MseBackward final : Node {
  Tensor pred, target;
  Reduction reduction;
  std::vector<Tensor> backward(const Tensor& dloss) override {
    Tensor dpred = ops::mse_backward(pred, target, dloss, reduction);
    Tensor dtarget;
    if (inputs[1].requires_grad()) {
      dtarget = dpred.clone();
      ops::scale_(dtarget, -1.0);
    }
    return {dpred, dtarget};
  }
  const char* name() const override { return "MseLossBackward"; }
  void release_saved() override { pred = target = Tensor(); }
};

struct ReluBackward final : Node {
  Tensor x;
  std::vector<Tensor> backward(const Tensor& dy) override { return {ops::relu_backward(x, dy)}; }
  const char* name() const override { return "ReluBackward"; }
  void release_saved() override { x = Tensor(); }
};

struct AddBackward final : Node {
  std::vector<Tensor> backward(const Tensor& dy) override { return {dy, dy}; }
  const char* name() const override { return "AddBackward"; }
};

}  // namespace

Tensor linear(const Tensor& x, const Tensor& W, const Tensor& b) {
  Tensor y = ops::linear_forward(x, W, b);
  auto node = std::make_shared<LinearBackward>();
  node->inputs = {x, W, b};
  node->x = x;
  node->W = W;
  return record(std::move(y), std::move(node));
}

Tensor mse_loss(const Tensor& pred, const Tensor& target, Reduction reduction) {
  Tensor loss = ops::mse_forward(pred, target, reduction);
  auto node = std::make_shared<MseBackward>();
  node->inputs = {pred, target};
  node->pred = pred;
  node->target = target;
  node->reduction = reduction;
  return record(std::move(loss), std::move(node));
}

Tensor relu(const Tensor& x) {
  Tensor y = ops::relu_forward(x);
  auto node = std::make_shared<ReluBackward>();
  node->inputs = {x};
  node->x = x;
  return record(std::move(y), std::move(node));
}

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor y = ops::add(a, b);
  auto node = std::make_shared<AddBackward>();
  node->inputs = {a, b};
  return record(std::move(y), std::move(node));
}

}  // namespace ringdp::autograd

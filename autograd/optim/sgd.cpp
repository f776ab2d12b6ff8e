// Implements autograd/optim/sgd.h (the contract is documented there). Tested by tests/unit/test_autograd.cpp
// (hand-computed steps).
#include "autograd/optim/sgd.h"

#include <set>
#include <string>

#include "tensor/ops.h"

namespace ringdp::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : params_(std::move(params)), momentum_buffers_(params_.size()), options_(options) {
  RINGDP_CHECK(options.lr_ >= 0, "SGD: learning rate ", options.lr_, " is negative");
  RINGDP_CHECK(options.momentum_ >= 0, "SGD: momentum ", options.momentum_, " is negative");
  RINGDP_CHECK(options.weight_decay_ >= 0, "SGD: weight decay ", options.weight_decay_, " is negative");
  RINGDP_CHECK(!options.nesterov_ || (options.momentum_ > 0 && options.dampening_ == 0),
               "SGD: nesterov needs momentum > 0 and zero dampening");
}

void SGD::step() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    const Tensor grad = p.grad();
    if (!grad.defined()) continue;
    kernels::SgdStep rule{options_.lr_,           options_.momentum_, options_.dampening_,
                          options_.weight_decay_, options_.nesterov_, false};
    Tensor* buffer = nullptr;
    if (options_.momentum_ != 0) {
      if (!momentum_buffers_[i].defined()) {
        momentum_buffers_[i] = empty(p.shape(), p.dtype(), p.device());
        rule.first_step = true;
      }
      buffer = &momentum_buffers_[i];
    }
    ops::sgd_step_(p, grad, buffer, rule);
  }
}

void SGD::zero_grad() {
  for (Tensor& p : params_) {
    Tensor grad = p.grad();
    if (grad.defined()) ops::fill_(grad, 0.0);
  }
}

autograd::StateDict SGD::state_dict() const {
  autograd::StateDict out;
  for (size_t i = 0; i < momentum_buffers_.size(); ++i)
    if (momentum_buffers_[i].defined())
      out.emplace_back("momentum_buffer." + std::to_string(i), momentum_buffers_[i]);
  return out;
}

int64_t SGD::state_bytes() const {
  int64_t bytes = 0;
  for (const Tensor& buffer : momentum_buffers_)
    if (buffer.defined()) bytes += static_cast<int64_t>(buffer.nbytes());
  return bytes;
}

void SGD::load_state_dict(const autograd::StateDict& state) {
  for (auto& buffer : momentum_buffers_) buffer = Tensor();
  std::set<size_t> seen;
  for (const auto& [name, tensor] : state) {
    // The whole suffix is the index: stoul alone read "1abc" as 1 and threw its own error for "x".
    const std::string digits = name.rfind("momentum_buffer.", 0) == 0 ? name.substr(16) : std::string();
    RINGDP_CHECK(
        !digits.empty() && digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string::npos,
        "SGD state: unexpected entry '", name, "' (expected momentum_buffer.<parameter index>)");
    const size_t index = std::stoul(digits);
    RINGDP_CHECK(seen.insert(index).second, "SGD state: '", name, "' appears twice");
    RINGDP_CHECK(index < params_.size(), "SGD state: '", name, "' but only ", params_.size(), " parameters");
    RINGDP_CHECK(tensor.shape() == params_[index].shape(), "SGD state: '", name, "' has shape ",
                 shape_str(tensor.shape()), ", parameter has ", shape_str(params_[index].shape()));
    momentum_buffers_[index] = empty(params_[index].shape(), params_[index].dtype(), params_[index].device());
    momentum_buffers_[index].copy_from(tensor);
  }
}

}  // namespace ringdp::optim

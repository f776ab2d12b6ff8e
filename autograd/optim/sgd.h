// optim::SGD with PyTorch's options and update rule (see kernels/sgd.h for the formula).
#pragma once

#include <vector>

#include "autograd/module.h"
#include "autograd/optim/optimizer.h"
#include "kernels/sgd.h"

namespace ringdp::optim {

struct SGDOptions {
  explicit SGDOptions(double lr) : lr_(lr) {}
  SGDOptions& momentum(double m) {
    momentum_ = m;
    return *this;
  }
  SGDOptions& dampening(double d) {
    dampening_ = d;
    return *this;
  }
  SGDOptions& weight_decay(double wd) {
    weight_decay_ = wd;
    return *this;
  }
  SGDOptions& nesterov(bool on) {
    nesterov_ = on;
    return *this;
  }
  double lr_, momentum_ = 0, dampening_ = 0, weight_decay_ = 0;
  bool nesterov_ = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  /// Updates every parameter that has a gradient.
  void step() override;
  void zero_grad() override;
  const SGDOptions& options() const { return options_; }
  /// "momentum_buffer.<i>" for each parameter with a buffer, in parameter order.
  autograd::StateDict state_dict() const override;
  void load_state_dict(const autograd::StateDict& state) override;
  int64_t state_bytes() const override;

 private:
  std::vector<Tensor> params_;
  std::vector<Tensor> momentum_buffers_;  // undefined until the parameter's first step
  SGDOptions options_;
};

}  // namespace ringdp::optim

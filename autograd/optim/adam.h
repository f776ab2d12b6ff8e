// optim::Adam and optim::AdamW with PyTorch 1.13's options, defaults and update rule (see
// kernels/adam.h for the formula): Adam adds weight decay to the gradient (L2), AdamW shrinks the
// parameter by 1 − lr·weight_decay before the step (decoupled). Each parameter has its own state:
// exp_avg, exp_avg_sq (zero-initialised at its first step) and its step count, as in PyTorch.
// AMSGrad is refused at construction. Tested by tests/unit/test_autograd.cpp (hand-computed steps).
#pragma once

#include <vector>

#include "autograd/module.h"
#include "autograd/optim/optimizer.h"
#include "kernels/adam.h"

namespace ringdp::optim {

struct AdamOptions {
  explicit AdamOptions(double lr = 1e-3) : lr_(lr) {}
  AdamOptions& betas(double beta1, double beta2) {
    beta1_ = beta1;
    beta2_ = beta2;
    return *this;
  }
  AdamOptions& eps(double e) {
    eps_ = e;
    return *this;
  }
  /// Adam: L2 added to the gradient; AdamW: decoupled. 0 by default for both here: PyTorch's
  /// AdamW defaults to 1e-2, so pass it explicitly when matching AdamW's defaults.
  AdamOptions& weight_decay(double wd) {
    weight_decay_ = wd;
    return *this;
  }
  AdamOptions& amsgrad(bool on) {
    amsgrad_ = on;
    return *this;
  }
  double lr_, beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8, weight_decay_ = 0;
  bool amsgrad_ = false;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options) : Adam(std::move(params), options, false) {}
  void step() override;
  void zero_grad() override;
  const AdamOptions& options() const { return options_; }
  /// "exp_avg.<i>", "exp_avg_sq.<i>" (the parameter's shape) and "step.<i>" (int64, one element)
  /// for each parameter that has taken a step, in parameter order.
  autograd::StateDict state_dict() const override;
  void load_state_dict(const autograd::StateDict& state) override;
  int64_t state_bytes() const override;

 protected:
  Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled);

 private:
  struct ParamState {
    Tensor exp_avg{}, exp_avg_sq{};  // undefined until the parameter's first step
    int64_t step = 0;
  };
  const char* name() const { return decoupled_ ? "AdamW" : "Adam"; }
  void load_entry(const std::string& name, const Tensor& tensor, std::vector<int>& seen);

  std::vector<Tensor> params_;
  std::vector<ParamState> state_;
  AdamOptions options_;
  bool decoupled_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions options) : Adam(std::move(params), options, true) {}
};

}  // namespace ringdp::optim

// The layers the trainer's models need, with PyTorch's names: Linear (LinearOptions),
// ReLU, Sequential, and MSELoss.
#pragma once

#include <initializer_list>

#include "autograd/functions.h"
#include "autograd/module.h"

namespace ringdp::autograd {

/// PyTorch's builder: `LinearOptions(10, 1).bias(false)` sets, `options.bias()` reads.
class LinearOptions {
 public:
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  LinearOptions& bias(bool on) {
    bias_ = on;
    return *this;
  }
  LinearOptions& dtype(DType d) {
    dtype_ = d;
    return *this;
  }
  LinearOptions& device(Device d) {
    device_ = d;
    return *this;
  }
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  bool bias() const { return bias_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

 private:
  int64_t in_features_, out_features_;
  bool bias_ = true;
  DType dtype_ = DType::float32;
  Device device_ = Device::cpu();
};

/// y = x·weightᵀ + bias. Initialised as PyTorch's default (kaiming_uniform with a = √5, which
/// is uniform in ±1/√in_features for the weight, and the same bound for the bias) from `seed`:
/// weight from philox stream 2·seed, bias from 2·seed + 1.
class Linear : public Module {
 public:
  explicit Linear(LinearOptions options, uint64_t seed = 0);
  Tensor forward(const Tensor& input) override;
  void reset_parameters(uint64_t seed);
  const LinearOptions& options() const { return options_; }

  Tensor weight;
  Tensor bias;

 private:
  LinearOptions options_;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& input) override { return relu(input); }
};

/// Runs its modules in order; they are named "0", "1", ... as in PyTorch.
class Sequential : public Module {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  Tensor forward(const Tensor& input) override;
  size_t size() const { return modules_.size(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

class MSELoss {
 public:
  explicit MSELoss(Reduction reduction = Reduction::mean) : reduction_(reduction) {}
  Tensor operator()(const Tensor& pred, const Tensor& target) const {
    return mse_loss(pred, target, reduction_);
  }

 private:
  Reduction reduction_;
};

}  // namespace ringdp::autograd

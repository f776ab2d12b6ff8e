// Module: named parameters and submodules with PyTorch's names and semantics.
// named_parameters() lists parameters in registration order with state_dict-style names
// ("weight", "0.weight", "2.bias"); state_dict()/load_state_dict() copy values by name.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace ringdp::autograd {

/// An ordered name → tensor list: what state_dict() returns and load_state_dict() takes.
using StateDict = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  virtual Tensor forward(const Tensor& input) = 0;
  Tensor operator()(const Tensor& input) { return forward(input); }

  /// Parameters (tensors that require grad) in registration order, depth first.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  /// Sets every parameter's gradient to zeros (kept allocated, so accumulation is in place).
  void zero_grad();
  StateDict state_dict() const;
  /// Copies values by name; every name must be present with the same shape, and no extras.
  void load_state_dict(const StateDict& state);
  /// Moves (or converts) every parameter; gradients are dropped.
  void to(Device device);

 protected:
  Tensor& register_parameter(std::string name, Tensor& slot, Tensor value);
  void register_module(std::string name, std::shared_ptr<Module> module);

 private:
  std::vector<std::pair<std::string, Tensor*>> parameters_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out) const;
};

}  // namespace ringdp::autograd

// Implements autograd/layers.h (the contract is documented there). Tested by tests/unit/test_autograd.cpp.
#include "autograd/layers.h"

#include <cmath>

namespace ringdp::autograd {

Linear::Linear(LinearOptions options, uint64_t seed) : options_(options) {
  RINGDP_CHECK(options.in_features() > 0 && options.out_features() > 0, "Linear(", options.in_features(),
               ", ", options.out_features(), "): feature counts must be positive");
  register_parameter(
      "weight", weight,
      empty({options.out_features(), options.in_features()}, options.dtype(), options.device()));
  if (options.bias())
    register_parameter("bias", bias, empty({options.out_features()}, options.dtype(), options.device()));
  reset_parameters(seed);
}

void Linear::reset_parameters(uint64_t seed) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(options_.in_features()));
  weight.copy_from(rand(weight.shape(), 2 * seed, -bound, bound, weight.dtype()));
  if (bias.defined()) bias.copy_from(rand(bias.shape(), 2 * seed + 1, -bound, bound, bias.dtype()));
}

Tensor Linear::forward(const Tensor& input) { return linear(input, weight, bias); }

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (auto& m : modules_) x = m->forward(x);
  return x;
}

}  // namespace ringdp::autograd

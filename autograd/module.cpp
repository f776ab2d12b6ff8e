// Implements autograd/module.h (the contract is documented there). Tested by tests/unit/test_autograd.cpp
// (names, state dicts).
#include "autograd/module.h"

#include <set>

#include "tensor/ops.h"

namespace ringdp::autograd {

Tensor& Module::register_parameter(std::string name, Tensor& slot, Tensor value) {
  slot = std::move(value);
  slot.set_requires_grad(true);
  parameters_.emplace_back(std::move(name), &slot);
  return slot;
}

void Module::register_module(std::string name, std::shared_ptr<Module> module) {
  children_.emplace_back(std::move(name), std::move(module));
}

void Module::collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out) const {
  for (const auto& [name, slot] : parameters_) out.emplace_back(prefix + name, slot);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect("", slots);
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& [name, slot] : slots) out.emplace_back(name, *slot);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, tensor] : named_parameters()) out.push_back(tensor);
  return out;
}

void Module::zero_grad() {
  for (Tensor& p : parameters()) {
    Tensor grad = p.grad();
    if (grad.defined()) ops::fill_(grad, 0.0);
  }
}

StateDict Module::state_dict() const {
  StateDict out;
  for (auto& [name, tensor] : named_parameters()) out.emplace_back(name, tensor);
  return out;
}

void Module::load_state_dict(const StateDict& state) {
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect("", slots);
  std::set<std::string> known;
  for (auto& [name, slot] : slots) {
    known.insert(name);
    const Tensor* value = nullptr;
    for (const auto& [key, tensor] : state)
      if (key == name) value = &tensor;
    RINGDP_CHECK(value != nullptr, "load_state_dict: missing parameter '", name, "'");
    RINGDP_CHECK(value->shape() == slot->shape(), "load_state_dict: parameter '", name, "' has shape ",
                 shape_str(value->shape()), " in the state dict but ", shape_str(slot->shape()),
                 " in the model");
    slot->copy_from(*value);
  }
  for (const auto& [key, tensor] : state)
    RINGDP_CHECK(known.count(key), "load_state_dict: unexpected parameter '", key, "' (not in the model)");
}

void Module::to(Device device) {
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect("", slots);
  for (auto& [name, slot] : slots) {
    if (slot->device() == device) continue;
    *slot = slot->to(device);
    slot->set_requires_grad(true);
  }
}

}  // namespace ringdp::autograd

// optim::Optimizer: what the trainer and ZeRO need of any optimizer (SGD, Adam, AdamW), so they
// hold one without knowing which.
#pragma once

#include <cstdint>

#include "autograd/module.h"

namespace ringdp::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// Updates every parameter that has a gradient.
  virtual void step() = 0;
  /// Zeroes the gradients in place (their tensors stay: DDP's .grad are views of its buckets).
  virtual void zero_grad() = 0;
  /// Entries named "<state>.<parameter index>", in parameter order; only the state that exists.
  virtual autograd::StateDict state_dict() const = 0;
  virtual void load_state_dict(const autograd::StateDict& state) = 0;
  /// Bytes of optimizer state held now (momentum buffers, moments; step counters not counted).
  virtual int64_t state_bytes() const = 0;
};

}  // namespace ringdp::optim

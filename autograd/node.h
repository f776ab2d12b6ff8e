// A node of the autograd graph: the backward of one operation. The output tensor of the
// operation holds the node (grad_fn); the node holds the operation's inputs (its edges) and
// whatever its backward needs (saved tensors), which the engine releases after running it.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace ringdp::autograd {

struct Node {
  Node();
  virtual ~Node() = default;

  /// Gradients with respect to each of `inputs`, given the gradient of the output; an
  /// undefined Tensor where an input needs none.
  virtual std::vector<Tensor> backward(const Tensor& grad_output) = 0;
  virtual const char* name() const = 0;
  /// Frees the saved tensors; called by the engine once this node has run.
  virtual void release_saved() {}

  std::vector<Tensor> inputs;
  uint64_t sequence;  ///< creation order: the engine runs later nodes first, as PyTorch does
  bool released = false;
};

/// True unless a NoGradGuard is alive on this thread.
bool grad_enabled();

/// Disables graph recording on this thread while alive (torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

/// Makes `output` the result of `node` when recording is on and any input requires grad.
Tensor record(Tensor output, std::shared_ptr<Node> node);

/// Runs backward from `root`: a scalar (gradient 1) or any shape with `gradient` given.
void backward(const Tensor& root, const Tensor& gradient = Tensor());

}  // namespace ringdp::autograd

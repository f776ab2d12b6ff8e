// Implements autograd/graph_walk.h: an iterative depth-first walk over grad_fn edges (graphs of
// deep models would overflow a recursive one).
#include "autograd/graph_walk.h"

#include <vector>

#include "autograd/node.h"

namespace ringdp::autograd {

std::unordered_set<const void*> reachable_leaves(const Tensor& output) {
  std::unordered_set<const void*> leaves;
  if (!output.defined() || !output.requires_grad()) return leaves;
  if (output.is_leaf()) {
    leaves.insert(output.id());
    return leaves;
  }
  std::unordered_set<const Node*> seen{output.grad_fn().get()};
  std::vector<const Node*> stack{output.grad_fn().get()};
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (const Tensor& input : node->inputs) {
      if (!input.defined() || !input.requires_grad()) continue;
      if (const Node* next = input.grad_fn().get()) {
        if (seen.insert(next).second) stack.push_back(next);
      } else {
        leaves.insert(input.id());
      }
    }
  }
  return leaves;
}

}  // namespace ringdp::autograd

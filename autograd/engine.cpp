// The backward engine. From the root's grad_fn it counts, for every node and every leaf, how
// many edges lead to it; then it runs nodes from a ready queue ordered by creation (latest
// first), summing the gradients that reach each node before running it. A leaf's gradient is
// final when its last edge has delivered: only then is it accumulated into .grad and are its
// hooks run, once per backward (the seam DistributedDataParallel uses).
// Tested in tests/unit/test_autograd.cpp.
#include <atomic>
#include <map>
#include <queue>
#include <unordered_map>

#include "autograd/node.h"
#include "core/timeline.h"
#include "tensor/ops.h"

namespace ringdp::autograd {

namespace {
thread_local bool g_grad_enabled = true;
// Shared by every thread (grad mode above is per thread, as in PyTorch, so graphs may be built on
// several): a plain ++ from two threads is a data race and could give two nodes one number.
// Relaxed is enough: the engine needs a node numbered after every node whose output it takes,
// and taking an output another thread made already orders the two draws (one atomic's
// modification order agrees with happens-before).
std::atomic<uint64_t> g_next_sequence{0};

void accumulate(Tensor& buffer, const Tensor& gradient) {
  buffer = buffer.defined() ? ops::add(buffer, gradient) : gradient;
}
}  // namespace

Node::Node() : sequence(g_next_sequence.fetch_add(1, std::memory_order_relaxed)) {}

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

Tensor record(Tensor output, std::shared_ptr<Node> node) {
  if (!grad_enabled()) return output;
  bool any = false;
  for (const Tensor& input : node->inputs) any = any || (input.defined() && input.requires_grad());
  if (!any) return output;
  output.set_requires_grad(true);
  output.set_grad_fn(std::move(node));
  return output;
}

namespace {

// One backward pass's bookkeeping: edges not yet delivered to each node and leaf, and the
// gradients summed so far.
struct BackwardPass {
  struct LeafState {
    Tensor leaf;
    Tensor buffer;
    int pending = 0;
  };
  std::unordered_map<const Node*, int> pending;
  std::unordered_map<const Node*, Tensor> node_gradients;
  std::map<const void*, LeafState> leaves;

  static void finish_leaf(LeafState& state) {
    Tensor grad = state.leaf.grad();
    if (grad.defined())
      ops::add_(grad, state.buffer);
    else
      state.leaf.set_grad(state.buffer.clone());
    for (const auto& [handle, hook] : state.leaf.hooks()) hook(state.leaf);
  }

  /// One DFS from `start`, each node expanded once: how many edges reach every node and leaf.
  void count_edges(Node* start) {
    std::vector<Node*> stack{start};
    pending[start] = 0;
    while (!stack.empty()) {
      Node* node = stack.back();
      stack.pop_back();
      RINGDP_CHECK(!node->released, "backward through a graph that has already been freed (", node->name(),
                   "): call backward() once per forward, or run the forward again");
      for (const Tensor& input : node->inputs) {
        if (!input.defined() || !input.requires_grad()) continue;
        if (Node* next = input.grad_fn().get()) {
          if (pending.find(next) == pending.end()) stack.push_back(next);
          ++pending[next];
        } else {
          auto& state = leaves[input.id()];
          state.leaf = input;
          ++state.pending;
        }
      }
    }
  }

  /// Delivers `node`'s input gradients, appending the nodes whose last edge this was to `ready`.
  void deliver(Node* node, const std::vector<Tensor>& grads, std::vector<Node*>& ready) {
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      const Tensor& input = node->inputs[i];
      if (!input.defined() || !input.requires_grad()) continue;
      RINGDP_CHECK(i < grads.size() && grads[i].defined(), node->name(), " produced no gradient for input ",
                   i);
      if (Node* next = input.grad_fn().get()) {
        accumulate(node_gradients[next], grads[i]);
        if (--pending[next] == 0) ready.push_back(next);
      } else {
        LeafState& state = leaves[input.id()];
        accumulate(state.buffer, grads[i]);
        if (--state.pending == 0) finish_leaf(state);
      }
    }
  }

  /// Runs every node from `start` on, latest created first, once all its gradients arrived.
  void run(Node* start, const Tensor& seed) {
    auto later_first = [](const Node* a, const Node* b) { return a->sequence < b->sequence; };
    std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> ready(later_first);
    node_gradients[start] = seed;
    ready.push(start);
    std::vector<Node*> became_ready;
    while (!ready.empty()) {
      Node* node = ready.top();
      ready.pop();
      const Tensor grad_output = std::move(node_gradients[node]);
      node_gradients.erase(node);
      std::vector<Tensor> grads;
      {
        timeline::Scope span("backward", node->name());
        grads = node->backward(grad_output);
      }
      node->release_saved();
      node->released = true;
      became_ready.clear();
      deliver(node, grads, became_ready);
      for (Node* next : became_ready) ready.push(next);
    }
  }
};

}  // namespace

void backward(const Tensor& root, const Tensor& gradient) {
  RINGDP_CHECK(root.requires_grad(),
               "backward() on a tensor that does not require grad "
               "(no input of the computation requires grad, or it ran under NoGradGuard)");
  Tensor seed = gradient;
  if (!seed.defined()) {
    RINGDP_CHECK(root.numel() == 1, "backward() on a non-scalar tensor of shape ", shape_str(root.shape()),
                 " needs a gradient argument of that shape");
    seed = ones(root.shape(), root.dtype(), root.device());
  } else {
    ops::check_same_shape(root, seed, "backward gradient");
  }
  BackwardPass pass;
  if (root.is_leaf()) {
    BackwardPass::LeafState state{root, seed, 0};
    BackwardPass::finish_leaf(state);
    return;
  }
  Node* start = root.grad_fn().get();
  pass.count_edges(start);
  pass.run(start, seed);
}

}  // namespace ringdp::autograd

namespace ringdp {
void Tensor::backward() const { autograd::backward(*this); }
}  // namespace ringdp

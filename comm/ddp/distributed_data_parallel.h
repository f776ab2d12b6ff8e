// DistributedDataParallel: one model replica per rank, kept identical by starting from rank 0's
// parameters and averaging gradients every step.
//
// Buckets: parameters are grouped in reverse registration order (the order backward finishes
// them) by PyTorch's rule: a bucket closes once it holds at least bucket_cap_mb (the first one
// first_bucket_mb, small), so it may end above the cap; one dtype and device per bucket
// (comm/ddp/bucket_assignment.h). A hook on each parameter marks
// its final gradient ready; when every parameter of a bucket is ready, the bucket's asynchronous
// all-reduce (avg) starts at once while backward continues on earlier layers. Buckets are
// launched strictly in index order on every rank, so all ranks issue the same collectives in the
// same order. When the last bucket is ready the hook waits for all of them.
//
// Gradients are views into their bucket (PyTorch's gradient_as_bucket_view): at a parameter's
// first synchronised backward the hook copies its gradient into the bucket once and makes .grad
// a view of that slice. From then on autograd accumulates straight into the bucket and the
// all-reduce averages .grad in place: no copy into the bucket, none back out (two passes over
// every gradient per step). A .grad replaced by other code (set_grad) is copied in again and
// viewed again at the next step. Consequence: a handle to .grad taken before the first step
// keeps the old tensor; take p.grad() afresh.
// One rank: nothing to average, so no collective runs at all.
//
// Unused parameters (find_unused_parameters, as PyTorch's): after each forward the graph is walked
// from the output (autograd/graph_walk.h); a parameter it does not reach gets no hook call this
// iteration, so at the first hook of backward it is marked ready with a zero slice (its .grad's
// current value where .grad is already the bucket's view), and its bucket can complete. After the
// buckets, one more all-reduce sums a used-map (one int32 per parameter): a parameter no rank used
// keeps its .grad as it was; one used elsewhere gets the average like the rest. With the option off
// a parameter that got no gradient is an error naming it (by name and index, as PyTorch's names
// them under TORCH_DISTRIBUTED_DEBUG=DETAIL).
//
// The split, as PyTorch's: this wrapper keeps the module (the parameter check and broadcast,
// forward, no_sync); the buckets, hooks and launches are its Reducer's (comm/ddp/reducer.h).
// Uneven inputs: comm/ddp/join.h (a rank out of batches shadows its peers' all-reduces).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/module.h"
#include "comm/communicator.h"
#include "comm/ddp/ddp_options.h"
#include "comm/ddp/grad_bucket.h"

namespace ringdp::ddp {

class Join;
class Reducer;

class DistributedDataParallel {
 public:
  DistributedDataParallel(std::shared_ptr<autograd::Module> module, std::shared_ptr<comm::Communicator> comm,
                          DdpOptions options = {});
  ~DistributedDataParallel();

  /// Starts an iteration: checks the previous one completed, then runs the module.
  Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }
  /// loss.backward() with timing, then checks every parameter got a gradient.
  void backward(const Tensor& loss);

  /// While alive, backward accumulates gradients locally without communicating
  /// (gradient accumulation); the first backward after it reduces the accumulated sum.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp);
    ~NoSync();

   private:
    DistributedDataParallel& ddp_;
  };
  NoSync no_sync() { return NoSync(*this); }

  autograd::Module& module() { return *module_; }
  comm::Communicator& communicator() { return *comm_; }
  const DdpOptions& options() const { return options_; }
  /// The gradient side (comm/ddp/reducer.h): what Join drives.
  Reducer& reducer() { return *reducer_; }
  const DdpStepStats& last_stats() const;
  /// Parameter names per bucket, in launch order (for tests and docs).
  std::vector<std::vector<std::string>> bucket_layout() const;
  /// Where parameter `name`'s gradient sits: its bucket and its offset (elements) in that
  /// bucket's buffer; throws when no trainable parameter has that name.
  std::pair<int, int64_t> locate(const std::string& name) const;
  /// The flat buffer bucket `index` is all-reduced in (for --explain and tests: read only).
  const Tensor& bucket_buffer(int index) const;

  /// Replaces each bucket's all-reduce by `hook(*state, bucket)` (comm/ddp/grad_bucket.h says
  /// what a hook must do; comm/ddp/default_hooks.h and powersgd_hook.h hold the built-ins).
  /// Once, before the first backward, as in PyTorch. The state lives as long as the wrapper.
  template <typename State, typename Hook>
  void register_comm_hook(std::shared_ptr<State> state, Hook hook) {
    register_comm_hook([state, hook](GradBucket& bucket) { return hook(*state, bucket); });
  }
  void register_comm_hook(CommHook hook);

 private:
  void broadcast_and_verify();

  std::shared_ptr<autograd::Module> module_;
  std::shared_ptr<comm::Communicator> comm_;
  DdpOptions options_;
  std::vector<const void*> owned_;  // the wrapped parameters' storage, released by the destructor
  std::unique_ptr<Reducer> reducer_;
};

}  // namespace ringdp::ddp

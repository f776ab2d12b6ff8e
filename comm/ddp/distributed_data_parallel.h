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
// Uneven inputs: comm/ddp/join.h (a rank out of batches shadows its peers' all-reduces).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/module.h"
#include "comm/communicator.h"
#include "comm/ddp/grad_bucket.h"

namespace ringdp::ddp {

/// One thing DDP did, as it happened (what ringdp-train --explain narrates).
struct DdpEvent {
  /// unused: find_unused_parameters marked `parameter` ready without a gradient (zeros).
  /// shadow: a joined rank all-reduced zeros for `bucket` (comm/ddp/join.h).
  enum class Kind { hook, launch, unused, shadow };
  Kind kind = Kind::hook;
  double seconds = 0;  ///< since this backward began
  std::string parameter{};  ///< hook: whose gradient arrived
  int bucket = 0;
  int64_t offset = 0;  ///< hook: elements into the bucket
  int64_t elements = 0;  ///< hook: the gradient's; launch: the bucket's
  int64_t bytes = 0;  ///< the gradient's or the bucket's
};

struct DdpOptions {
  double bucket_cap_mb = 25.0;
  double first_bucket_mb = 1.0;
  comm::Algorithm algorithm = comm::Algorithm::automatic;
  /// false: no all-reduce starts before backward has produced every gradient (the DDP paper's
  /// baseline, ringdp-train --no-overlap); they then run back to back.
  bool overlap = true;
  /// false: gradients stay local and no collective runs in backward (every rank's model is still
  /// checked and broadcast from rank 0 at construction); for ZeroRedundancyOptimizer, which
  /// reduce-scatters the gradients in its step (comm/ddp/zero_redundancy_optimizer.h).
  bool sync_gradients = true;
  /// true: parameters the forward's output does not depend on are found after each forward and
  /// take part with zeros (PyTorch's find_unused_parameters); false: such a parameter is an error.
  bool find_unused_parameters = false;
  /// true: each bucket's buffer comes from Communicator::allocate_shared (CPU parameters, every
  /// rank on one host), so its all-reduce reads and writes the peers' buckets directly
  /// (comm/algorithms/all_reduce_shared_direct.cpp) instead of copying through slots. The memory stays until
  /// the communicator is destroyed (docs/library.md, "Shared allocations"): each wrapper built
  /// with it adds its buckets' size for the communicator's life. Ignored in a world of one.
  bool shared_buckets = false;
  /// Called on the training thread at each hook and each bucket launch.
  std::function<void(const DdpEvent&)> on_event{};
};

struct DdpStepStats {
  double backward_seconds = 0;  ///< from backward() start to the end of autograd's backward
  double comm_wait_seconds = 0;  ///< waiting for all-reduces after autograd's backward ended
  double comm_seconds = 0;  ///< first bucket launch to last bucket completion
  double overlap = 0;  ///< share of comm_seconds hidden behind backward (0..1)
  int64_t bytes_reduced = 0;
  int buckets = 0;
};

class Join;

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
    explicit NoSync(DistributedDataParallel& ddp) : ddp_(ddp) { ddp_.sync_enabled_ = false; }
    ~NoSync() { ddp_.sync_enabled_ = ddp_.options_.sync_gradients; }

   private:
    DistributedDataParallel& ddp_;
  };
  NoSync no_sync() { return NoSync(*this); }

  autograd::Module& module() { return *module_; }
  const DdpStepStats& last_stats() const { return stats_; }
  /// Parameter names per bucket, in launch order (for tests and docs).
  std::vector<std::vector<std::string>> bucket_layout() const;
  /// Where parameter `name`'s gradient sits: its bucket and its offset (elements) in that
  /// bucket's buffer; throws when no trainable parameter has that name.
  std::pair<int, int64_t> locate(const std::string& name) const;
  /// The flat buffer bucket `index` is all-reduced in (for --explain and tests: read only).
  const Tensor& bucket_buffer(int index) const { return buckets_.at(index).buffer; }

  /// Replaces each bucket's all-reduce by `hook(*state, bucket)` (comm/ddp/grad_bucket.h says
  /// what a hook must do; comm/ddp/default_hooks.h and powersgd_hook.h hold the built-ins).
  /// Once, before the first backward, as in PyTorch. The state lives as long as the wrapper.
  template <typename State, typename Hook>
  void register_comm_hook(std::shared_ptr<State> state, Hook hook) {
    register_comm_hook([state, hook](GradBucket& bucket) { return hook(*state, bucket); });
  }
  void register_comm_hook(CommHook hook);  // comm/ddp/ddp_comm_hook.cpp

 private:
  friend class Join;  // shadows the buckets' all-reduces on a rank that ran out of inputs
  struct Slot {
    std::string name;
    Tensor param;
    int bucket;
    int64_t offset;  // elements into the bucket's buffer
    Tensor grad_view{};  // the slice of the bucket shaped as param: what .grad becomes
    bool ready = false;
    bool used = false;  // reached by this iteration's graph (find_unused_parameters), or since sync
    uint64_t hook = 0;  // the handle of our gradient hook on param, removed by the destructor
    int index = 0;  // among the trainable parameters in registration order (PyTorch's index)
  };
  struct Bucket {
    std::vector<int> slots;
    Tensor buffer;
    int pending = 0;
    bool launched = false;
    comm::Work work;
    std::chrono::steady_clock::time_point launched_at;
  };

  void broadcast_and_verify();
  /// The parameters that require gradients must be the ones wrapped (PyTorch asks for a new
  /// wrapper after freezing or unfreezing); called by each forward.
  void check_trainable_set() const;
  void on_gradient_ready(int slot);
  /// Counts `slot` ready; launches what became ready, and ends the iteration after the last one.
  void mark_ready(int slot);
  /// find_unused_parameters: the slots this forward's graph does not reach, as ready, with zeros.
  void mark_unused_ready();
  bool slot_marked_unused(int slot) const;
  /// find_unused_parameters, after the buckets: per slot, whether some rank used it (see the
  /// top). `contribute` false: this rank adds zeros (a joined rank's shadow).
  std::vector<bool> all_reduce_used_map(bool contribute);
  /// Join: the all-reduce of [contributing ranks, ranks syncing gradients] each forward makes.
  void notify_join();
  /// RINGDP_TRACE=1: each bucket's flat buffer, parameter by parameter (at construction), and
  /// where each parameter's .grad points once it becomes a view of its bucket (first backward).
  void trace_layout() const;
  void trace_grad_view(const Slot& slot) const;
  void launch_ready_buckets();
  comm::Work run_comm_hook(int index);  // comm/ddp/ddp_comm_hook.cpp
  void finish_iteration();
  void reset_iteration();
  /// The parameters whose gradient has not arrived this iteration, and PyTorch's advice.
  std::string unready_message() const;

  std::shared_ptr<autograd::Module> module_;
  std::shared_ptr<comm::Communicator> comm_;
  DdpOptions options_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  int next_bucket_ = 0;
  int slots_ready_ = 0;
  bool sync_enabled_ = true;
  bool iteration_synced_ = false;  // this iteration's gradients have been averaged
  bool trace_ = false;  // RINGDP_TRACE
  bool unused_marked_ = false;  // this backward's mark_unused_ready has run
  std::vector<int> unused_slots_;  // slots this forward's graph does not reach
  Join* join_ = nullptr;  // the live Join context, if any
  int64_t contributing_ranks_ = 0;  // under Join: this iteration's divisor (ranks not yet joined)
  bool join_step_open_ = false;  // under Join: the peers were told this step syncs; no backward yet
  std::chrono::steady_clock::time_point backward_begin_;
  DdpStepStats stats_;
  CommHook comm_hook_{};
  bool backward_ran_ = false;  // register_comm_hook is refused after the first backward
};

}  // namespace ringdp::ddp

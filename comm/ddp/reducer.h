// Reducer: DDP's gradient side, as PyTorch splits it (torch/csrc/distributed/c10d/reducer.hpp):
// the parameters' slots in their buckets, the hook on each parameter, the launch of each bucket's
// all-reduce (or the communication hook's collectives), the end of an iteration, the unused
// parameters' marking and used-map, and the per-step state a Join drives. The module wrapper
// (comm/ddp/distributed_data_parallel.h, which documents the behaviour) keeps the module: the
// parameter check and broadcast, forward, no_sync. Tested through it by tests/mpi/test_ddp.cpp,
// test_comm_hooks.cpp and test_join.cpp.
//
// Buckets: parameters are grouped in reverse registration order (the order backward finishes
// them) by PyTorch's rule (comm/ddp/bucket_assignment.h). A hook on each parameter marks its final
// gradient ready; when every parameter of a bucket is ready, the bucket's asynchronous all-reduce
// starts at once while backward continues on earlier layers. Buckets are launched strictly in index
// order on every rank, so all ranks issue the same collectives in the same order. The last
// parameter's hook waits for all of them (PyTorch's finalize_backward, which ringdp's engine has no
// end-of-backward queue to defer).
//
// Not installed: DistributedDataParallel holds it through a pointer, so the public header does not
// carry the bookkeeping.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/module.h"
#include "comm/communicator.h"
#include "comm/ddp/ddp_options.h"
#include "comm/ddp/grad_bucket.h"

namespace ringdp::ddp {

class Reducer {
 public:
  /// `parameters`: the trainable ones, by name, in registration order. Builds the buckets and
  /// registers a hook on each parameter. Communicates only through allocate_shared
  /// (DdpOptions::shared_buckets), which every rank calls alike.
  Reducer(std::vector<std::pair<std::string, Tensor>> parameters, std::shared_ptr<comm::Communicator> comm,
          DdpOptions options);
  /// Removes the hooks (the parameters usually outlive DDP) and waits for buckets in flight.
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  /// Every forward: the trainable set must still be the wrapped one (PyTorch asks for a new
  /// wrapper after freezing or unfreezing).
  void check_trainable_set(autograd::Module& module) const;
  /// Every forward: the previous iteration must have completed; starts a new one.
  void prepare_for_forward();
  /// After a forward with gradients enabled: find_unused_parameters' walk from `output`.
  void prepare_for_backward(const Tensor& output);
  /// Around autograd's backward: timing, then the check that every gradient arrived.
  void begin_backward();
  void end_backward();

  /// no_sync: false keeps gradients local; the next synced backward reduces their sum.
  void set_sync(bool sync) { sync_enabled_ = sync; }

  const DdpStepStats& last_stats() const { return stats_; }
  std::vector<std::vector<std::string>> bucket_layout() const;
  std::pair<int, int64_t> locate(const std::string& name) const;
  const Tensor& bucket_buffer(int index) const { return buckets_.at(index).buffer; }
  void register_comm_hook(CommHook hook);

  // Join's side (comm/ddp/join.h has the protocol).
  /// Attaches or detaches the one live Join, refusing what a joined rank could not shadow.
  void join_attach(bool attach);
  bool join_attached() const { return join_attached_; }
  /// A forward counted this step: `contributing` ranks still have inputs; the buckets are summed
  /// and divided by it (when this rank syncs).
  void join_open_step(int64_t contributing);
  bool join_step_open() const { return join_step_open_; }
  /// Whether this rank's next backward reduces gradients (not under no_sync).
  bool syncing() const { return sync_enabled_; }
  /// A joined rank's step: the collectives the contributing ranks' backward issues, in their
  /// order, with zeros; then .grad is each bucket's average over `contributing`.
  void join_shadow_step(int64_t contributing);
  /// The device the buckets live on, which Join's own collectives use.
  Device device() const { return buckets_.front().buffer.device(); }
  void reset_iteration();

 private:
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

  void build_buckets(const std::vector<std::pair<std::string, Tensor>>& parameters);
  void on_gradient_ready(int slot);
  void emit(DdpEvent::Kind kind, const Slot& slot, std::chrono::steady_clock::time_point at) const;
  /// Counts `slot` ready; launches what became ready.
  void mark_ready(int slot);
  /// find_unused_parameters: the slots this forward's graph does not reach, as ready, with zeros.
  void mark_unused_ready();
  bool slot_marked_unused(int slot) const;
  /// find_unused_parameters, after the buckets: per slot, whether some rank used it.
  /// `contribute` false: this rank adds zeros (a joined rank's shadow).
  std::vector<bool> all_reduce_used_map(bool contribute);
  void launch_ready_buckets();
  comm::Work run_comm_hook(int index);
  void finish_iteration();
  void record_finish(std::chrono::steady_clock::time_point wait_start,
                     std::chrono::steady_clock::time_point wait_end,
                     std::chrono::steady_clock::time_point last_done);
  /// RINGDP_TRACE=1: each bucket's flat buffer, parameter by parameter (at construction), and
  /// where each parameter's .grad points once it becomes a view of its bucket (first backward).
  void trace_layout() const;
  void trace_grad_view(const Slot& slot) const;
  /// The parameters whose gradient has not arrived this iteration, and PyTorch's advice.
  std::string unready_message() const;

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
  bool join_attached_ = false;  // a Join is live
  int64_t contributing_ranks_ = 0;  // under Join: this iteration's divisor (ranks not yet joined)
  bool join_step_open_ = false;  // under Join: the peers were told this step syncs; no backward yet
  std::chrono::steady_clock::time_point backward_begin_;
  DdpStepStats stats_;
  CommHook comm_hook_{};
  bool backward_ran_ = false;  // register_comm_hook is refused after the first backward
};

}  // namespace ringdp::ddp

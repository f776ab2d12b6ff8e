// The "ringdp" backend of torch.distributed: a c10d process group whose collectives are ringdp's
// own algorithms on a ringdp Communicator (auto by default; RINGDP_* settings apply as in any
// ringdp program, docs/settings.md). One tensor per call, on the CPU (docs/torch.md).
//
// Every call posts its collectives on ringdp's worker and returns at once (bindings/torch/
// completions.h completes them, in issue order unless a caller waits); the Work's future holds the output
// tensors (a list, as gloo's does), which DDP's comm hooks read. Calls from several threads (DDP's autograd
// thread and the main thread) are serialized here, since a Communicator takes calls from one thread
// at a time. A bad argument is a RuntimeError from the call; a ringdp error while the collective
// runs (a mismatched call) is a RuntimeError from wait() and the future, carrying ringdp's message;
// the watchdog's timeout raises its report the same way and breaks the group (as gloo; ringdp's
// programs end the job instead); a peer that leaves raises naming it (comm/world/departures.h); a peer
// killed ends the job through the launcher.
//
// torch's list forms (all_gather, gather, scatter, all_to_all, allgather_coalesced) travel as one
// buffer through the ringdp collective and are copied into or out of the list; outputs of
// different sizes make all_gather the uneven one. A receive from any source is
// Communicator::recv_any; its Work's sourceRank() names the sender. Tested by tests/torch/.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bindings/torch/compat.h"
#include "bindings/torch/completions.h"
#include "comm/communicator.h"

namespace ringdp_torch {

class ProcessGroupRingdp final : public BackendBase {
 public:
  ProcessGroupRingdp(std::shared_ptr<ringdp::comm::Communicator> communicator);

  const std::string getBackendName() const override { return "ringdp"; }
  /// Collectives issued on this group (sends and receives apart: they involve some ranks only),
  /// from 0 on every member: equal across the group unless the ranks' calls have diverged.
  uint64_t getSequenceNumberForGroup() override;
  /// Every member starts at 0 (the group is made collectively): there is nothing to agree on.
  void setSequenceNumberForGroup() override {}
// Backend's setTimeout, shutdown and abort: overridden from 2.6, where all three are known to be
// virtual (tested on 2.15); an older 2.x keeps torch's defaults (a warning, no-ops).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
  /// dist.set_timeout: the watchdog's timeout for the calls issued after it (Communicator::set_timeout).
  void setTimeout(std::chrono::milliseconds timeout) override;
  /// destroy_process_group: completes what was issued and stops this group's threads, at once
  /// rather than when the last reference goes (DDP keeps one); later calls raise.
  void shutdown() override;
  /// _abort_process_group: later calls raise at once; what was issued finishes or fails on its own
  /// (a running collective cannot be withdrawn from its peers), without being waited for.
  void abort() override;
#endif

  c10::intrusive_ptr<::c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                             const ::c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                             const ::c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const ::c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                          const ::c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                             std::vector<at::Tensor>& inputs,
                                             const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                   const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const ::c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                           std::vector<std::vector<at::Tensor>>& inputs,
                                           const ::c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                  std::vector<std::vector<at::Tensor>>& inputs,
                                                  const ::c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                        const ::c10d::ReduceScatterOptions& opts) override;
#if TORCH_VERSION_MAJOR >= 2
  // What functional collectives, DTensor and FSDP2 call even for one tensor (2.15 forwards its
  // all_gather_single_coalesced and reduce_scatter_single_coalesced here): one ringdp collective
  // over the tensors packed (they must share a dtype, as FSDP2's and DTensor's do).
  c10::intrusive_ptr<::c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const ::c10d::ReduceScatterOptions& opts) override;
#endif
  c10::intrusive_ptr<::c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                                 std::vector<int64_t>& output_split_sizes,
                                                 std::vector<int64_t>& input_split_sizes,
                                                 const ::c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                            const ::c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<::c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<::c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<::c10d::Work> barrier(const ::c10d::BarrierOptions& opts) override;

 private:
  /// Runs `body(call)` under the issue lock, which posts the call's collectives, and hands the call
  /// to the completions; a ringdp::Error (a bad argument) becomes torch's RuntimeError naming `name`.
  template <typename F>
  c10::intrusive_ptr<::c10d::Work> issue(const char* name, std::vector<at::Tensor> outputs, F&& body,
                                         Completions& to);
  template <typename F>
  c10::intrusive_ptr<::c10d::Work> issue(const char* name, std::vector<at::Tensor> outputs, F&& body) {
    return issue(name, std::move(outputs), std::forward<F>(body), completions_);
  }

  std::shared_ptr<ringdp::comm::Communicator> comm_;
  std::mutex issue_;
  std::atomic<uint64_t> sequence_{0};  // collectives issued
  // "shut down (...)" or "aborted (...)"; empty while usable. A lock of its own: abort() must not
  // wait behind a call holding issue_ (set_timeout waits for the calls issued before it).
  std::mutex ended_mutex_;
  std::string ended_;
  // Declared last: they complete what was issued before comm_ goes. Sends and receives apart, so
  // that a receive whose peer sends only after a later collective never holds that collective up.
  Completions completions_, point_to_point_;
};

}  // namespace ringdp_torch

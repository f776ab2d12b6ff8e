// Implements comm/ddp/join.h (the protocol is described there), and the one DDP method that
// belongs to it: the count each forward contributes.
#include "comm/ddp/join.h"

#include <chrono>

#include "autograd/node.h"
#include "core/timeline.h"
#include "tensor/ops.h"

namespace ringdp::ddp {

namespace {

struct JoinCounts {
  int64_t contributing = 0;  ///< ranks that still have inputs this step
  int64_t syncing = 0;  ///< of those, the ones whose backward reduces gradients (not no_sync)
};

// The per-step all-reduce of the protocol, on the buckets' device (NCCL carries CUDA tensors only).
JoinCounts exchange_counts(comm::Communicator& comm, Device device, bool contributing, bool syncing,
                           comm::Algorithm algorithm) {
  // On the timeline: the protocol's own collectives are told apart from the gradients' (docs/ddp.md).
  timeline::Scope span("join", contributing ? "join: counts" : "join: counts (joined)");
  Tensor counts = zeros({2}, DType::int64);
  counts.data<int64_t>()[0] = contributing ? 1 : 0;
  counts.data<int64_t>()[1] = contributing && syncing ? 1 : 0;
  Tensor on_device = counts.to(device);
  comm.all_reduce(on_device, ReduceOp::sum, {.algorithm = algorithm});
  counts = on_device.to(Device::cpu());
  const JoinCounts result{counts.data<int64_t>()[0], counts.data<int64_t>()[1]};
  if (span.active())
    span.set_args(
        detail::concat("\"contributing\": ", result.contributing, ", \"syncing\": ", result.syncing));
  // Every rank sees the same counts, so every rank stops here together.
  RINGDP_CHECK(result.syncing == 0 || result.syncing == result.contributing,
               "Join: ", result.contributing - result.syncing, " of ", result.contributing,
               " training rank(s) ran this forward under no_sync while the others synchronise gradients; "
               "all ranks must step no_sync alike");
  return result;
}

}  // namespace

void DistributedDataParallel::notify_join() {
  // The peers counted that step as synchronising and issued its buckets' all-reduces; this rank
  // did not, so from here on the collectives would pair up wrongly.
  RINGDP_CHECK(!join_step_open_,
               "Join: the previous forward with gradients enabled had no backward; under a Join every such "
               "forward must be followed by backward (run evaluation under NoGradGuard)");
  join_step_open_ = sync_enabled_;
  const JoinCounts counts =
      exchange_counts(*comm_, buckets_.front().buffer.device(), true, sync_enabled_, options_.algorithm);
  contributing_ranks_ = counts.contributing;
}

Join::Join(DistributedDataParallel& ddp, JoinOptions options) : ddp_(ddp), options_(std::move(options)) {
  RINGDP_CHECK(ddp_.join_ == nullptr, "Join: this DistributedDataParallel already has a live Join");
  // ZeroRedundancyOptimizer reduces in its step, which a joined rank would not shadow.
  RINGDP_CHECK(ddp_.options_.sync_gradients,
               "Join: the DistributedDataParallel was built with sync_gradients = false (for "
               "ZeroRedundancyOptimizer), whose collectives a joined rank cannot shadow");
  // A hook's collectives are its own (PowerSGD issues three per bucket): a joined rank shadows
  // only the default all-reduce.
  RINGDP_CHECK(!ddp_.comm_hook_,
               "Join: this DistributedDataParallel has a communication hook, whose "
               "collectives a joined rank cannot shadow");
  ddp_.join_ = this;
}

Join::~Join() {
  if (ddp_.join_ == this) ddp_.join_ = nullptr;
}

int64_t Join::join() {
  RINGDP_CHECK(!joined_, "Join: join() was already called on this rank");
  RINGDP_CHECK(!ddp_.join_step_open_,
               "Join: join() between a forward and its backward; finish the step first");
  joined_ = true;
  const Device device = ddp_.buckets_.front().buffer.device();
  int64_t shadowed = 0, rounds = 0;
  while (true) {
    const JoinCounts counts = exchange_counts(*ddp_.comm_, device, false, false, ddp_.options_.algorithm);
    if (counts.contributing == 0) break;
    ++rounds;  // a peer still trains, under no_sync too: this rank is not the last to join
    if (counts.syncing == 0) continue;  // the peers accumulate under no_sync: no gradient moves
    shadow_step(counts.contributing);
    ++shadowed;
  }
  sync_final_model(rounds == 0);
  ddp_.reset_iteration();
  ddp_.join_ = nullptr;
  return shadowed;
}

void Join::shadow_step(int64_t contributing) {
  DistributedDataParallel& ddp = ddp_;
  ddp.reset_iteration();
  const auto began = std::chrono::steady_clock::now();
  // The same collectives, in the same order, as the contributing ranks' backward: each bucket
  // (summed; zeros from here), then the used-map.
  for (size_t i = 0; i < ddp.buckets_.size(); ++i) {
    Tensor& buffer = ddp.buckets_[i].buffer;
    // Named on the timeline: the all-reduce itself looks like any bucket's.
    timeline::Scope span("join", "shadow all_reduce of zeros");
    if (span.active())
      span.set_args(detail::concat("\"bucket\": ", i, ", \"elements\": ", buffer.numel(),
                                   ", \"contributing\": ", contributing));
    ops::fill_(buffer, 0.0);
    if (ddp.options_.on_event)
      ddp.options_.on_event(
          DdpEvent{.kind = DdpEvent::Kind::shadow,
                   .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(),
                   .bucket = static_cast<int>(i),
                   .offset = 0,
                   .elements = buffer.numel(),
                   .bytes = static_cast<int64_t>(buffer.nbytes())});
    ddp.comm_->all_reduce(buffer, ReduceOp::sum, {.algorithm = ddp.options_.algorithm});
    ops::scale_(buffer, 1.0 / static_cast<double>(contributing));
  }
  std::vector<bool> used(ddp.slots_.size(), true);
  if (ddp.options_.find_unused_parameters) used = ddp.all_reduce_used_map(false);
  for (size_t s = 0; s < ddp.slots_.size(); ++s) {
    auto& slot = ddp.slots_[s];
    if (used[s] && !slot.param.grad().is_same(slot.grad_view)) slot.param.set_grad(slot.grad_view);
  }
  if (options_.on_shadow_step) options_.on_shadow_step();
}

void Join::sync_final_model(bool last_to_join) {
  // The highest rank among the last to join is the source, as in PyTorch's join hook.
  comm::Communicator& comm = *ddp_.comm_;
  if (comm.size() == 1) return;
  timeline::Scope span("join", "join: final model broadcast");
  const Device device = ddp_.buckets_.front().buffer.device();
  Tensor source = full({1}, last_to_join ? comm.rank() : -1, DType::int64).to(device);
  comm.all_reduce(source, ReduceOp::max, {.algorithm = ddp_.options_.algorithm});
  const int root = static_cast<int>(source.to(Device::cpu()).data<int64_t>()[0]);
  autograd::NoGradGuard no_grad;
  for (auto& [name, p] : ddp_.module_->named_parameters()) {
    Tensor value = p;
    comm.broadcast(value, root);
  }
}

}  // namespace ringdp::ddp

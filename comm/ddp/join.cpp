// Implements comm/ddp/join.h (the protocol is described there). The per-step state it drives is
// the Reducer's (comm/ddp/reducer.h: join_*).
#include "comm/ddp/join.h"

#include "autograd/node.h"
#include "comm/ddp/reducer.h"
#include "core/timeline.h"

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

void Join::count_step(DistributedDataParallel& ddp) {
  Reducer& reducer = ddp.reducer();
  // The peers counted that step as synchronising and issued its buckets' all-reduces; this rank
  // did not, so from here on the collectives would pair up wrongly.
  RINGDP_CHECK(!reducer.join_step_open(),
               "Join: the previous forward with gradients enabled had no backward; under a Join every such "
               "forward must be followed by backward (run evaluation under NoGradGuard)");
  const JoinCounts counts =
      exchange_counts(ddp.communicator(), reducer.device(), true, reducer.syncing(), ddp.options().algorithm);
  reducer.join_open_step(counts.contributing);
}

Join::Join(DistributedDataParallel& ddp, JoinOptions options) : ddp_(ddp), options_(std::move(options)) {
  ddp_.reducer().join_attach(true);
  attached_ = true;
}

Join::~Join() {
  if (attached_) ddp_.reducer().join_attach(false);
}

int64_t Join::join() {
  RINGDP_CHECK(!joined_, "Join: join() was already called on this rank");
  Reducer& reducer = ddp_.reducer();
  RINGDP_CHECK(!reducer.join_step_open(),
               "Join: join() between a forward and its backward; finish the step first");
  joined_ = true;
  int64_t shadowed = 0, rounds = 0;
  while (true) {
    const JoinCounts counts =
        exchange_counts(ddp_.communicator(), reducer.device(), false, false, ddp_.options().algorithm);
    if (counts.contributing == 0) break;
    ++rounds;  // a peer still trains, under no_sync too: this rank is not the last to join
    if (counts.syncing == 0) continue;  // the peers accumulate under no_sync: no gradient moves
    reducer.join_shadow_step(counts.contributing);
    if (options_.on_shadow_step) options_.on_shadow_step();
    ++shadowed;
  }
  sync_final_model(rounds == 0);
  reducer.reset_iteration();
  reducer.join_attach(false);
  attached_ = false;
  return shadowed;
}

void Join::sync_final_model(bool last_to_join) {
  // The highest rank among the last to join is the source, as in PyTorch's join hook.
  comm::Communicator& comm = ddp_.communicator();
  if (comm.size() == 1) return;
  timeline::Scope span("join", "join: final model broadcast");
  const Device device = ddp_.reducer().device();
  Tensor source = full({1}, last_to_join ? comm.rank() : -1, DType::int64).to(device);
  comm.all_reduce(source, ReduceOp::max, {.algorithm = ddp_.options().algorithm});
  const int root = static_cast<int>(source.to(Device::cpu()).data<int64_t>()[0]);
  autograd::NoGradGuard no_grad;
  for (auto& [name, p] : ddp_.module().named_parameters()) {
    Tensor value = p;
    comm.broadcast(value, root);
  }
}

}  // namespace ringdp::ddp

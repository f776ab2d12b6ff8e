// find_unused_parameters (documented in comm/ddp/distributed_data_parallel.h): the parameters a
// forward did not reach, marked ready with zeros; the used-map all-reduce; and the error that names
// the parameters without a gradient when the option is off. Methods of DistributedDataParallel
// kept apart from its core loop. Tested by tests/mpi/test_join.cpp ([unused]).
#include <algorithm>
#include <chrono>
#include <sstream>

#include "comm/ddp/distributed_data_parallel.h"
#include "tensor/ops.h"

namespace ringdp::ddp {

namespace {
double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

void DistributedDataParallel::mark_unused_ready() {
  // At the first hook of backward, as PyTorch's Reducer: the walk ran after forward, but marking
  // then would launch buckets before backward began.
  unused_marked_ = true;
  for (int index : unused_slots_) {
    Slot& slot = slots_[index];
    const Tensor grad = slot.param.grad();
    if (!grad.defined())
      ops::fill_(slot.grad_view, 0.0);
    else if (!grad.is_same(slot.grad_view))
      slot.grad_view.copy_from(grad);  // accumulated under no_sync, or set by the caller
    slot.ready = true;
    if (options_.on_event)
      options_.on_event(DdpEvent{.kind = DdpEvent::Kind::unused,
                                 .seconds = seconds(std::chrono::steady_clock::now() - backward_begin_),
                                 .parameter = slot.name,
                                 .bucket = slot.bucket,
                                 .offset = slot.offset,
                                 .elements = slot.param.numel(),
                                 .bytes = static_cast<int64_t>(slot.param.nbytes())});
    mark_ready(index);
  }
}

bool DistributedDataParallel::slot_marked_unused(int slot) const {
  return std::find(unused_slots_.begin(), unused_slots_.end(), slot) != unused_slots_.end();
}

std::vector<bool> DistributedDataParallel::all_reduce_used_map(bool contribute) {
  Tensor map = zeros({static_cast<int64_t>(slots_.size())}, DType::int32);
  if (contribute)
    for (size_t s = 0; s < slots_.size(); ++s) map.data<int32_t>()[s] = slots_[s].used ? 1 : 0;
  if (comm_->size() > 1) {
    Tensor on_device = map.to(buckets_.front().buffer.device());
    comm_->all_reduce(on_device, ReduceOp::sum, {.algorithm = options_.algorithm});
    map = on_device.to(Device::cpu());
  }
  std::vector<bool> used(slots_.size());
  for (size_t s = 0; s < slots_.size(); ++s) used[s] = map.data<int32_t>()[s] > 0;
  for (Slot& slot : slots_) slot.used = false;
  return used;
}

std::string DistributedDataParallel::unready_message() const {
  // PyTorch's Reducer names the indices, and the names under TORCH_DISTRIBUTED_DEBUG=DETAIL; both
  // cost nothing here, so both are always given.
  std::vector<const Slot*> unready;
  for (const Slot& s : slots_)
    if (!s.ready) unready.push_back(&s);
  std::sort(unready.begin(), unready.end(), [](const Slot* a, const Slot* b) { return a->index < b->index; });
  std::ostringstream names, indices;
  for (const Slot* s : unready) {
    names << (names.tellp() ? ", " : "") << s->name;
    indices << (indices.tellp() ? " " : "") << s->index;
  }
  return detail::concat(
      "DDP: rank ", comm_->rank(), ": parameter(s) ", names.str(),
      " received no gradient in this iteration, so their buckets could not be reduced. The module has "
      "parameters that were not used in producing the loss: pass find_unused_parameters = true "
      "(DdpOptions; ringdp-train --find-unused-parameters), and make sure every output of forward takes "
      "part in the loss. Parameter indices which did not receive grad for rank ",
      comm_->rank(), ": ", indices.str());
}

}  // namespace ringdp::ddp

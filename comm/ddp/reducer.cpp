// Implements comm/ddp/reducer.h; the behaviour is documented in comm/ddp/distributed_data_parallel.h
// (gradients as bucket views, unused parameters) and comm/ddp/join.h (the shadow step).
#include "comm/ddp/reducer.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "autograd/graph_walk.h"
#include "comm/ddp/bucket_assignment.h"
#include "core/settings.h"
#include "core/timeline.h"
#include "tensor/ops.h"

namespace ringdp::ddp {

namespace {
using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

Reducer::Reducer(std::vector<std::pair<std::string, Tensor>> parameters,
                 std::shared_ptr<comm::Communicator> comm, DdpOptions options)
    : comm_(std::move(comm)), options_(std::move(options)) {
  build_buckets(parameters);
  trace_ = settings::flag(settings::Id::trace).value_or(false);
  if (trace_) trace_layout();
  for (size_t s = 0; s < slots_.size(); ++s)
    slots_[s].hook =
        slots_[s].param.register_hook([this, s](Tensor&) { on_gradient_ready(static_cast<int>(s)); });
  sync_enabled_ = options_.sync_gradients;
  reset_iteration();
}

void Reducer::build_buckets(const std::vector<std::pair<std::string, Tensor>>& parameters) {
  std::vector<BucketParameter> sizes;
  for (const auto& [name, p] : parameters)
    sizes.push_back({static_cast<int64_t>(p.nbytes()), p.dtype(), p.device()});
  const double first_cap = std::min(options_.first_bucket_mb, options_.bucket_cap_mb) * 1024 * 1024;
  const auto assignment = assign_buckets(sizes, options_.bucket_cap_mb * 1024 * 1024, first_cap);
  for (const std::vector<int>& members : assignment) {
    Bucket& bucket = buckets_.emplace_back();
    int64_t elements = 0;
    for (int index : members) {
      const auto& [name, p] = parameters[index];
      slots_.push_back(Slot{name, p, static_cast<int>(buckets_.size()) - 1, elements});
      slots_.back().index = index;
      bucket.slots.push_back(static_cast<int>(slots_.size()) - 1);
      elements += p.numel();
    }
    const Tensor& first = parameters[members.front()].second;
    RINGDP_CHECK(!options_.shared_buckets || first.device().is_cpu(),
                 "DDP: shared_buckets takes CPU parameters; '", parameters[members.front()].first, "' is on ",
                 first.device().str());
    // Every rank builds the same buckets in the same order, so allocate_shared's collective calls
    // match, and each bucket sits at the same place of the same allocation on every rank.
    bucket.buffer = options_.shared_buckets && comm_->size() > 1
                        ? comm_->allocate_shared({elements}, first.dtype())
                        : zeros({elements}, first.dtype(), first.device());
    for (int s : bucket.slots)
      slots_[s].grad_view =
          bucket.buffer.flat_view(slots_[s].offset, slots_[s].param.numel()).reshape(slots_[s].param.shape());
  }
}

Reducer::~Reducer() {
  // The parameters usually outlive the wrapper: a hook left behind would call into freed memory
  // at the next backward.
  for (Slot& slot : slots_) slot.param.remove_hook(slot.hook);
  // Collectives still in flight reference our buffers: let them finish.
  for (Bucket& b : buckets_) {
    if (b.launched) {
      try {
        b.work.wait();
      } catch (...) {
      }
    }
  }
}

void Reducer::reset_iteration() {
  for (Slot& s : slots_) s.ready = false;
  for (Bucket& b : buckets_) {
    b.pending = static_cast<int>(b.slots.size());
    b.launched = false;
  }
  next_bucket_ = 0;
  slots_ready_ = 0;
  iteration_synced_ = false;
  unused_marked_ = false;
  unused_slots_.clear();
}

void Reducer::check_trainable_set(autograd::Module& module) const {
  // Runs every forward, so the common case is cheap: every wrapped parameter still trainable and
  // as many trainable parameters as wrapped ones means the two sets are equal. Names only on error.
  for (const Slot& s : slots_)
    RINGDP_CHECK(s.param.requires_grad(), "DDP: parameter '", s.name,
                 "' was frozen after DistributedDataParallel was built; build a new wrapper after freezing "
                 "parameters");
  size_t trainable = 0;
  for (const Tensor& p : module.parameters()) trainable += p.requires_grad();
  if (trainable == slots_.size()) return;
  for (const auto& [name, p] : module.named_parameters()) {
    const bool wrapped =
        std::any_of(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.param.is_same(p); });
    RINGDP_CHECK(!p.requires_grad() || wrapped, "DDP: parameter '", name,
                 "' requires gradients but did not when DistributedDataParallel was built; build a new "
                 "wrapper after unfreezing parameters");
  }
}

void Reducer::prepare_for_forward() {
  if (slots_ready_ != 0 && slots_ready_ != static_cast<int>(slots_.size())) RINGDP_FAIL(unready_message());
  reset_iteration();
}

void Reducer::prepare_for_backward(const Tensor& output) {
  if (!options_.find_unused_parameters) return;
  const auto reached = autograd::reachable_leaves(output);
  for (size_t s = 0; s < slots_.size(); ++s) {
    const bool used = reached.contains(slots_[s].param.id());
    slots_[s].used = slots_[s].used || used;  // since the last synchronised step (no_sync)
    if (!used) unused_slots_.push_back(static_cast<int>(s));
  }
}

void Reducer::begin_backward() {
  backward_begin_ = Clock::now();
  backward_ran_ = true;
  stats_ = DdpStepStats{};
}

void Reducer::end_backward() {
  stats_.backward_seconds = seconds(Clock::now() - backward_begin_) - stats_.comm_wait_seconds;
  if (sync_enabled_ && !iteration_synced_) RINGDP_FAIL(unready_message());
  if (!sync_enabled_) reset_iteration();  // accumulating: the next backward starts afresh
}

void Reducer::emit(DdpEvent::Kind kind, const Slot& slot, Clock::time_point at) const {
  options_.on_event(DdpEvent{.kind = kind,
                             .seconds = seconds(at - backward_begin_),
                             .parameter = slot.name,
                             .bucket = slot.bucket,
                             .offset = slot.offset,
                             .elements = slot.param.numel(),
                             .bytes = static_cast<int64_t>(slot.param.nbytes())});
}

void Reducer::on_gradient_ready(int index) {
  if (!sync_enabled_) {
    slots_[index].ready = true;
    return;
  }
  if (options_.find_unused_parameters && !unused_marked_) mark_unused_ready();
  Slot& slot = slots_[index];
  RINGDP_CHECK(!(slot.ready && slot_marked_unused(index)), "DDP: parameter '", slot.name,
               "' got a gradient although the forward's output does not depend on it "
               "(find_unused_parameters had marked it unused): use it inside the module's forward, or not "
               "in the loss at all");
  RINGDP_CHECK(!slot.ready, "DDP: gradient of '", slot.name,
               "' arrived twice in one iteration: backward was "
               "called twice without a forward through the DDP wrapper (and an optimizer step) in between");
  slot.ready = true;
  // Read only for someone who records it: a hook runs for every parameter of every step.
  const bool recorded = options_.on_event || timeline::enabled();
  const auto began = recorded ? Clock::now() : Clock::time_point{};
  if (options_.on_event) emit(DdpEvent::Kind::hook, slot, began);
  // Once per parameter (or after someone replaced .grad): later steps accumulate in the bucket.
  const Tensor grad = slot.param.grad();
  if (!grad.is_same(slot.grad_view)) {
    slot.grad_view.copy_from(grad);
    slot.param.set_grad(slot.grad_view);
    if (trace_) trace_grad_view(slot);
  }
  mark_ready(index);
  if (timeline::enabled())  // implies `recorded`, so `began` was read
    timeline::complete("hook", "hook " + slot.name, began, Clock::now(), timeline::Row::main,
                       detail::concat("\"bucket\": ", slot.bucket, ", \"offset\": ", slot.offset,
                                      ", \"elements\": ", slot.param.numel()));
  if (slots_ready_ == static_cast<int>(slots_.size())) finish_iteration();
}

void Reducer::mark_ready(int index) {
  ++slots_ready_;
  if (--buckets_[slots_[index].bucket].pending == 0 && options_.overlap) launch_ready_buckets();
}

void Reducer::mark_unused_ready() {
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
    if (options_.on_event) emit(DdpEvent::Kind::unused, slot, Clock::now());
    mark_ready(index);
  }
}

bool Reducer::slot_marked_unused(int slot) const {
  return std::find(unused_slots_.begin(), unused_slots_.end(), slot) != unused_slots_.end();
}

std::vector<bool> Reducer::all_reduce_used_map(bool contribute) {
  Tensor map = zeros({static_cast<int64_t>(slots_.size())}, DType::int32);
  if (contribute)
    for (size_t s = 0; s < slots_.size(); ++s) map.data<int32_t>()[s] = slots_[s].used ? 1 : 0;
  if (comm_->size() > 1) {
    Tensor on_device = map.to(device());
    comm_->all_reduce(on_device, ReduceOp::sum, {.algorithm = options_.algorithm});
    map = on_device.to(Device::cpu());
  }
  std::vector<bool> used(slots_.size());
  for (size_t s = 0; s < slots_.size(); ++s) used[s] = map.data<int32_t>()[s] > 0;
  for (Slot& slot : slots_) slot.used = false;
  return used;
}

void Reducer::launch_ready_buckets() {
  while (next_bucket_ < static_cast<int>(buckets_.size()) && buckets_[next_bucket_].pending == 0) {
    const int index = next_bucket_++;
    Bucket& b = buckets_[index];
    b.launched_at = Clock::now();
    b.launched = true;
    if (options_.on_event)
      options_.on_event(DdpEvent{.kind = DdpEvent::Kind::launch,
                                 .seconds = seconds(b.launched_at - backward_begin_),
                                 .bucket = index,
                                 .offset = 0,
                                 .elements = b.buffer.numel(),
                                 .bytes = static_cast<int64_t>(b.buffer.nbytes())});
    if (comm_hook_) {  // called on one rank too, as in PyTorch: a compression still rounds
      b.work = run_comm_hook(index);
      continue;
    }
    if (comm_->size() == 1) {
      b.work = comm::Work::completed();  // the average of one rank's gradient is that gradient
      continue;
    }
    // Under Join the divisor is the ranks that contributed, counted at this step's forward: sum
    // here, divide in finish_iteration.
    const ReduceOp op = join_step_open_ ? ReduceOp::sum : ReduceOp::avg;
    b.work = comm_->all_reduce(b.buffer, op, {.algorithm = options_.algorithm, .async = true});
    stats_.bytes_reduced += static_cast<int64_t>(b.buffer.nbytes());
  }
}

void Reducer::register_comm_hook(CommHook hook) {
  RINGDP_CHECK(hook != nullptr, "DDP: register_comm_hook: the hook is empty");
  RINGDP_CHECK(!comm_hook_, "DDP: register_comm_hook can only be called once (as in PyTorch)");
  // A hook with state (PowerSGD's error feedback) must see every synchronised step from the first.
  RINGDP_CHECK(!backward_ran_, "DDP: register_comm_hook must be called before the first backward");
  RINGDP_CHECK(!join_attached_,
               "DDP: register_comm_hook while a Join is live: a joined rank shadows only "
               "the default all-reduce");
  comm_hook_ = std::move(hook);
}

comm::Work Reducer::run_comm_hook(int index) {
  const Bucket& b = buckets_[index];
  GradBucket bucket{.index = index,
                    .last = index + 1 == static_cast<int>(buckets_.size()),
                    .buffer = b.buffer,
                    .algorithm = options_.algorithm};
  for (int s : b.slots) {
    bucket.gradients.push_back(slots_[s].grad_view);
    bucket.parameters.push_back(slots_[s].param);
    bucket.names.push_back(slots_[s].name);
  }
  comm::Work work = comm_hook_(bucket);
  stats_.bytes_reduced += bucket.bytes_communicated;
  return work;
}

void Reducer::finish_iteration() {
  // Called from the hook of the last parameter: autograd's backward is about to end.
  if (!options_.overlap) launch_ready_buckets();  // every bucket is ready now
  const auto wait_start = Clock::now();
  Clock::time_point last_done = wait_start;
  for (Bucket& b : buckets_) {
    b.work.wait();
    last_done = std::max(last_done, b.work.completed_at());
  }
  const auto wait_end = Clock::now();
  if (join_step_open_ && comm_->size() > 1)
    for (Bucket& b : buckets_) ops::scale_(b.buffer, 1.0 / static_cast<double>(contributing_ranks_));
  std::vector<bool> used(slots_.size(), true);
  if (options_.find_unused_parameters) used = all_reduce_used_map(true);
  // Only a hook registered after ours can have given a parameter another .grad since; a parameter
  // unused here has none yet. One no rank used keeps its .grad as it was (PyTorch's rule).
  for (size_t s = 0; s < slots_.size(); ++s) {
    Slot& slot = slots_[s];
    Tensor grad = slot.param.grad();
    if (!used[s]) continue;
    if (!grad.defined())
      slot.param.set_grad(slot.grad_view);
    else if (!grad.is_same(slot.grad_view))
      grad.copy_from(slot.grad_view);
  }
  record_finish(wait_start, wait_end, last_done);
  iteration_synced_ = true;
  join_step_open_ = false;
}

void Reducer::record_finish(Clock::time_point wait_start, Clock::time_point wait_end,
                            Clock::time_point last_done) {
  if (timeline::enabled()) {
    timeline::complete("ddp", "wait for buckets", wait_start, wait_end, timeline::Row::main);
    for (size_t i = 0; i < buckets_.size(); ++i) {
      const Bucket& b = buckets_[i];
      timeline::async_interval(
          "bucket", detail::concat("bucket ", i), static_cast<int>(i), b.launched_at, b.work.completed_at(),
          timeline::Row::buckets,
          detail::concat("\"bytes\": ", b.buffer.nbytes(), ", \"parameters\": ", b.slots.size()));
    }
  }
  stats_.buckets = static_cast<int>(buckets_.size());
  stats_.comm_wait_seconds = seconds(wait_end - wait_start);
  const auto first_launch = buckets_.front().launched_at;
  stats_.comm_seconds = seconds(last_done - first_launch);
  const double exposed = std::max(0.0, seconds(last_done - wait_start));
  stats_.overlap = stats_.comm_seconds > 0 ? std::clamp(1.0 - exposed / stats_.comm_seconds, 0.0, 1.0) : 0.0;
}

void Reducer::join_attach(bool attach) {
  if (!attach) {
    join_attached_ = false;
    return;
  }
  RINGDP_CHECK(!join_attached_, "Join: this DistributedDataParallel already has a live Join");
  // ZeroRedundancyOptimizer reduces in its step, which a joined rank would not shadow.
  RINGDP_CHECK(options_.sync_gradients,
               "Join: the DistributedDataParallel was built with sync_gradients = false (for "
               "ZeroRedundancyOptimizer), whose collectives a joined rank cannot shadow");
  // A hook's collectives are its own (PowerSGD issues three per bucket): a joined rank shadows
  // only the default all-reduce.
  RINGDP_CHECK(!comm_hook_,
               "Join: this DistributedDataParallel has a communication hook, whose "
               "collectives a joined rank cannot shadow");
  join_attached_ = true;
}

void Reducer::join_open_step(int64_t contributing) {
  join_step_open_ = sync_enabled_;
  contributing_ranks_ = contributing;
}

void Reducer::join_shadow_step(int64_t contributing) {
  reset_iteration();
  const auto began = Clock::now();
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Tensor& buffer = buckets_[i].buffer;
    // Named on the timeline: the all-reduce itself looks like any bucket's.
    timeline::Scope span("join", "shadow all_reduce of zeros");
    if (span.active())
      span.set_args(detail::concat("\"bucket\": ", i, ", \"elements\": ", buffer.numel(),
                                   ", \"contributing\": ", contributing));
    ops::fill_(buffer, 0.0);
    if (options_.on_event)
      options_.on_event(DdpEvent{.kind = DdpEvent::Kind::shadow,
                                 .seconds = seconds(Clock::now() - began),
                                 .bucket = static_cast<int>(i),
                                 .offset = 0,
                                 .elements = buffer.numel(),
                                 .bytes = static_cast<int64_t>(buffer.nbytes())});
    comm_->all_reduce(buffer, ReduceOp::sum, {.algorithm = options_.algorithm});
    ops::scale_(buffer, 1.0 / static_cast<double>(contributing));
  }
  std::vector<bool> used(slots_.size(), true);
  if (options_.find_unused_parameters) used = all_reduce_used_map(false);
  for (size_t s = 0; s < slots_.size(); ++s) {
    Slot& slot = slots_[s];
    if (used[s] && !slot.param.grad().is_same(slot.grad_view)) slot.param.set_grad(slot.grad_view);
  }
}

void Reducer::trace_layout() const {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    std::ostringstream line;
    line << "ringdp trace: rank " << comm_->rank() << " ddp bucket " << b << " holds "
         << buckets_[b].buffer.numel() << " " << dtype_name(buckets_[b].buffer.dtype()) << ":";
    for (size_t i = 0; i < buckets_[b].slots.size(); ++i) {
      const Slot& s = slots_[buckets_[b].slots[i]];
      line << (i ? ";" : "") << " " << s.name << " " << shape_str(s.param.shape()) << " at offset "
           << s.offset << " (" << s.param.numel() << " elements)";
    }
    std::fprintf(stderr, "%s\n", line.str().c_str());
  }
}

void Reducer::trace_grad_view(const Slot& slot) const {
  // Read from the pointers, not from slot.offset: the line shows where .grad really lives.
  const Tensor& buffer = buckets_[slot.bucket].buffer;
  const Tensor grad = slot.param.grad();
  const int64_t begin =
      (static_cast<const char*>(grad.data_ptr()) - static_cast<const char*>(buffer.data_ptr())) /
      static_cast<int64_t>(dtype_size(buffer.dtype()));
  std::fprintf(
      stderr,
      "ringdp trace: rank %d ddp bucket %d: %s.grad %s is a view of elements [%lld, %lld) of its buffer\n",
      comm_->rank(), slot.bucket, slot.name.c_str(), shape_str(grad.shape()).c_str(),
      static_cast<long long>(begin), static_cast<long long>(begin + grad.numel()));
}

std::pair<int, int64_t> Reducer::locate(const std::string& name) const {
  for (const Slot& s : slots_)
    if (s.name == name) return {s.bucket, s.offset};
  RINGDP_FAIL("DDP: no trainable parameter named '", name, "'");
}

std::vector<std::vector<std::string>> Reducer::bucket_layout() const {
  std::vector<std::vector<std::string>> out(buckets_.size());
  for (const Slot& s : slots_) out[s.bucket].push_back(s.name);
  return out;
}

std::string Reducer::unready_message() const {
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

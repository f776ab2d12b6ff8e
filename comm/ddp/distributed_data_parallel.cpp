// Implements comm/ddp/distributed_data_parallel.h (the contract is documented there). Tested by
// tests/mpi/test_ddp.cpp.
#include "comm/ddp/distributed_data_parallel.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>
#include <sstream>

#include "autograd/graph_walk.h"
#include "autograd/node.h"
#include "comm/ddp/bucket_assignment.h"
#include "core/fnv1a.h"
#include "core/settings.h"
#include "core/timeline.h"
#include "tensor/ops.h"

namespace ringdp::ddp {

namespace {
using Clock = std::chrono::steady_clock;

// The parameters (by storage) that a live wrapper owns, in this process.
std::set<const void*>& owned() {
  static std::set<const void*> parameters;
  return parameters;
}
std::mutex& owned_mutex() {
  static std::mutex mutex;
  return mutex;
}
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string describe(const std::vector<std::pair<std::string, Tensor>>& params) {
  std::ostringstream out;
  for (const auto& [name, p] : params)
    out << name << " " << shape_str(p.shape()) << " " << dtype_name(p.dtype()) << "\n";
  return out.str();
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<autograd::Module> module,
                                                 std::shared_ptr<comm::Communicator> comm, DdpOptions options)
    : module_(std::move(module)), comm_(std::move(comm)), options_(options) {
  RINGDP_CHECK(options.bucket_cap_mb > 0, "DDP: bucket_cap_mb ", options.bucket_cap_mb, " must be positive");
  // Frozen parameters (requires_grad false) are broadcast like the rest but get no hook and no
  // bucket, as in PyTorch.
  std::vector<std::pair<std::string, Tensor>> params;
  for (auto& named : module_->named_parameters())
    if (named.second.requires_grad()) params.push_back(std::move(named));
  RINGDP_CHECK(!params.empty(), "DDP: the module has no parameters that require gradients");
  // Checked on every rank before any message moves: a second wrapper would all-reduce every
  // gradient twice, and its hooks would call into whichever wrapper died first.
  {
    std::lock_guard lock(owned_mutex());
    for (const auto& [name, p] : params)
      RINGDP_CHECK(!owned().contains(p.data_ptr()), "DDP: parameter '", name,
                   "' is already wrapped by a live DistributedDataParallel; destroy that one first");
  }
  broadcast_and_verify();

  std::vector<BucketParameter> sizes;
  for (const auto& [name, p] : params)
    sizes.push_back({static_cast<int64_t>(p.nbytes()), p.dtype(), p.device()});
  const double first_cap = std::min(options.first_bucket_mb, options.bucket_cap_mb) * 1024 * 1024;
  const auto assignment = assign_buckets(sizes, options.bucket_cap_mb * 1024 * 1024, first_cap);
  for (const std::vector<int>& members : assignment) {
    Bucket& bucket = buckets_.emplace_back();
    int64_t elements = 0;
    for (int index : members) {
      const auto& [name, p] = params[index];
      slots_.push_back(Slot{name, p, static_cast<int>(buckets_.size()) - 1, elements});
      slots_.back().index = index;
      bucket.slots.push_back(static_cast<int>(slots_.size()) - 1);
      elements += p.numel();
    }
    const Tensor& first = params[members.front()].second;
    RINGDP_CHECK(!options.shared_buckets || first.device().is_cpu(),
                 "DDP: shared_buckets takes CPU parameters; '", params[members.front()].first, "' is on ",
                 first.device().str());
    // Every rank builds the same buckets in the same order, so allocate_shared's collective calls
    // match, and each bucket sits at the same place of the same allocation on every rank.
    bucket.buffer = options.shared_buckets && comm_->size() > 1
                        ? comm_->allocate_shared({elements}, first.dtype())
                        : zeros({elements}, first.dtype(), first.device());
    for (int s : bucket.slots)
      slots_[s].grad_view =
          bucket.buffer.flat_view(slots_[s].offset, slots_[s].param.numel()).reshape(slots_[s].param.shape());
  }
  trace_ = settings::flag(settings::Id::trace).value_or(false);
  if (trace_) trace_layout();
  for (size_t s = 0; s < slots_.size(); ++s)
    slots_[s].hook =
        slots_[s].param.register_hook([this, s](Tensor&) { on_gradient_ready(static_cast<int>(s)); });
  {
    std::lock_guard lock(owned_mutex());  // only now: a constructor that threw owns nothing
    for (const Slot& slot : slots_) owned().insert(slot.param.data_ptr());
  }
  sync_enabled_ = options_.sync_gradients;
  reset_iteration();
}

DistributedDataParallel::~DistributedDataParallel() {
  // The parameters usually outlive the wrapper: a hook left behind would call into freed memory
  // at the next backward.
  for (Slot& slot : slots_) slot.param.remove_hook(slot.hook);
  {
    std::lock_guard lock(owned_mutex());
    for (const Slot& slot : slots_) owned().erase(slot.param.data_ptr());
  }
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

void DistributedDataParallel::broadcast_and_verify() {
  const auto params = module_->named_parameters();
  const std::string mine = describe(params);
  // The check travels on the parameters' device: the NCCL backend carries CUDA tensors only.
  const Device device = params.empty() ? Device::cpu() : params.front().second.device();
  Tensor hashes = zeros({comm_->size()}, DType::int64, device);
  Tensor my_hash = full({1}, 0, DType::int64);
  my_hash.data<int64_t>()[0] = static_cast<int64_t>(fnv1a(mine));
  comm_->all_gather(my_hash.to(device), hashes);
  const Tensor all = hashes.to(Device::cpu());
  std::vector<int> differing;
  for (int r = 0; r < comm_->size(); ++r)
    if (all.data<int64_t>()[r] != all.data<int64_t>()[0]) differing.push_back(r);
  if (!differing.empty()) {
    // Every rank learns rank 0's description, so each can name its first difference.
    Tensor length = full({1}, static_cast<double>(mine.size()), DType::int64, device);
    comm_->broadcast(length, 0);
    Tensor text = zeros({static_cast<int64_t>(length.to(Device::cpu()).item())}, DType::int32);
    if (comm_->rank() == 0)
      for (size_t i = 0; i < mine.size(); ++i) text.data<int32_t>()[i] = mine[i];
    text = text.to(device);
    comm_->broadcast(text, 0);
    text = text.to(Device::cpu());
    std::string root;
    for (int64_t i = 0; i < text.numel(); ++i) root.push_back(static_cast<char>(text.data<int32_t>()[i]));
    std::istringstream a(root), b(mine);
    std::string line_root, line_mine;
    while (true) {
      const bool more_root = static_cast<bool>(std::getline(a, line_root));
      const bool more_mine = static_cast<bool>(std::getline(b, line_mine));
      if (!more_root && !more_mine) break;
      if (!more_root) line_root = "(nothing)";
      if (!more_mine) line_mine = "(nothing)";
      if (line_root != line_mine)
        RINGDP_FAIL("DDP: rank ", comm_->rank(), "'s parameters differ from rank 0's: rank 0 has '",
                    line_root, "', rank ", comm_->rank(), " has '", line_mine, "'");
    }
    std::ostringstream ranks;
    for (int r : differing) ranks << (ranks.tellp() ? ", " : "") << r;
    RINGDP_FAIL("DDP: the parameters of rank(s) ", ranks.str(),
                " differ from rank 0's (their messages say how)");
  }
  for (auto& [name, p] : params) {
    Tensor value = p;
    autograd::NoGradGuard no_grad;
    comm_->broadcast(value, 0);
  }
}

void DistributedDataParallel::reset_iteration() {
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

void DistributedDataParallel::check_trainable_set() const {
  // Runs every forward, so the common case is cheap: every wrapped parameter still trainable and
  // as many trainable parameters as wrapped ones means the two sets are equal. Names only on error.
  for (const Slot& s : slots_)
    RINGDP_CHECK(s.param.requires_grad(), "DDP: parameter '", s.name,
                 "' was frozen after DistributedDataParallel was built; build a new wrapper after freezing "
                 "parameters");
  size_t trainable = 0;
  for (const Tensor& p : module_->parameters()) trainable += p.requires_grad();
  if (trainable == slots_.size()) return;
  for (const auto& [name, p] : module_->named_parameters()) {
    const bool wrapped =
        std::any_of(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.param.is_same(p); });
    RINGDP_CHECK(!p.requires_grad() || wrapped, "DDP: parameter '", name,
                 "' requires gradients but did not when DistributedDataParallel was built; build a new "
                 "wrapper after unfreezing parameters");
  }
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  check_trainable_set();
  if (slots_ready_ != 0 && slots_ready_ != static_cast<int>(slots_.size())) RINGDP_FAIL(unready_message());
  reset_iteration();
  if (join_ && autograd::grad_enabled()) notify_join();
  Tensor output = module_->forward(input);
  if (options_.find_unused_parameters && autograd::grad_enabled()) {
    const auto reached = autograd::reachable_leaves(output);
    for (size_t s = 0; s < slots_.size(); ++s) {
      const bool used = reached.contains(slots_[s].param.id());
      slots_[s].used = slots_[s].used || used;  // since the last synchronised step (no_sync)
      if (!used) unused_slots_.push_back(static_cast<int>(s));
    }
  }
  return output;
}

void DistributedDataParallel::backward(const Tensor& loss) {
  const auto start = Clock::now();
  backward_begin_ = start;
  backward_ran_ = true;
  stats_ = DdpStepStats{};
  {
    timeline::Scope span("ddp", "loss.backward()");
    loss.backward();
  }
  stats_.backward_seconds = seconds(Clock::now() - start) - stats_.comm_wait_seconds;
  if (sync_enabled_ && !iteration_synced_) RINGDP_FAIL(unready_message());
  if (!sync_enabled_) reset_iteration();  // accumulating: the next backward starts afresh
}

void DistributedDataParallel::on_gradient_ready(int index) {
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
  if (options_.on_event)
    options_.on_event(DdpEvent{.kind = DdpEvent::Kind::hook,
                               .seconds = seconds(began - backward_begin_),
                               .parameter = slot.name,
                               .bucket = slot.bucket,
                               .offset = slot.offset,
                               .elements = slot.param.numel(),
                               .bytes = static_cast<int64_t>(slot.param.nbytes())});
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

void DistributedDataParallel::mark_ready(int index) {
  ++slots_ready_;
  if (--buckets_[slots_[index].bucket].pending == 0 && options_.overlap) launch_ready_buckets();
}

void DistributedDataParallel::launch_ready_buckets() {
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

void DistributedDataParallel::finish_iteration() {
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
  iteration_synced_ = true;
  join_step_open_ = false;
}

void DistributedDataParallel::trace_layout() const {
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

void DistributedDataParallel::trace_grad_view(const Slot& slot) const {
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

std::pair<int, int64_t> DistributedDataParallel::locate(const std::string& name) const {
  for (const Slot& s : slots_)
    if (s.name == name) return {s.bucket, s.offset};
  RINGDP_FAIL("DDP: no trainable parameter named '", name, "'");
}

std::vector<std::vector<std::string>> DistributedDataParallel::bucket_layout() const {
  std::vector<std::vector<std::string>> out(buckets_.size());
  for (const Slot& s : slots_) out[s.bucket].push_back(s.name);
  return out;
}

}  // namespace ringdp::ddp

// Implements comm/ddp/distributed_data_parallel.h (the contract is documented there): the module's
// side; the gradients' is comm/ddp/reducer.cpp. Tested by tests/mpi/test_ddp.cpp.
#include "comm/ddp/distributed_data_parallel.h"

#include <mutex>
#include <set>
#include <sstream>

#include "autograd/node.h"
#include "comm/ddp/join.h"
#include "comm/ddp/reducer.h"
#include "core/fnv1a.h"
#include "core/timeline.h"
#include "tensor/ops.h"

namespace ringdp::ddp {

namespace {
// The parameters (by storage) that a live wrapper owns, in this process.
std::set<const void*>& owned() {
  static std::set<const void*> parameters;
  return parameters;
}
std::mutex& owned_mutex() {
  static std::mutex mutex;
  return mutex;
}

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
  for (const auto& [name, p] : params) owned_.push_back(p.data_ptr());
  reducer_ = std::make_unique<Reducer>(std::move(params), comm_, options_);
  std::lock_guard lock(owned_mutex());  // only now: a constructor that threw owns nothing
  for (const void* storage : owned_) owned().insert(storage);
}

DistributedDataParallel::~DistributedDataParallel() {
  reducer_.reset();  // its hooks first: until then a backward could still call into it
  std::lock_guard lock(owned_mutex());
  for (const void* storage : owned_) owned().erase(storage);
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp) : ddp_(ddp) {
  ddp_.reducer_->set_sync(false);
}
DistributedDataParallel::NoSync::~NoSync() { ddp_.reducer_->set_sync(ddp_.options_.sync_gradients); }

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

Tensor DistributedDataParallel::forward(const Tensor& input) {
  reducer_->check_trainable_set(*module_);
  reducer_->prepare_for_forward();
  if (reducer_->join_attached() && autograd::grad_enabled()) Join::count_step(*this);
  Tensor output = module_->forward(input);
  if (autograd::grad_enabled()) reducer_->prepare_for_backward(output);
  return output;
}

void DistributedDataParallel::backward(const Tensor& loss) {
  reducer_->begin_backward();
  {
    timeline::Scope span("ddp", "loss.backward()");
    loss.backward();
  }
  reducer_->end_backward();
}

void DistributedDataParallel::register_comm_hook(CommHook hook) {
  reducer_->register_comm_hook(std::move(hook));
}
const DdpStepStats& DistributedDataParallel::last_stats() const { return reducer_->last_stats(); }
const Tensor& DistributedDataParallel::bucket_buffer(int index) const {
  return reducer_->bucket_buffer(index);
}
std::pair<int, int64_t> DistributedDataParallel::locate(const std::string& name) const {
  return reducer_->locate(name);
}
std::vector<std::vector<std::string>> DistributedDataParallel::bucket_layout() const {
  return reducer_->bucket_layout();
}

}  // namespace ringdp::ddp

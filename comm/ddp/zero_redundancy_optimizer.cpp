// Implements comm/ddp/zero_redundancy_optimizer.h (the layout and the step are described there).
// Tested by tests/mpi/test_zero.cpp.
#include "comm/ddp/zero_redundancy_optimizer.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "core/timeline.h"
#include "tensor/ops.h"

namespace ringdp::ddp {

namespace {
// "exp_avg_sq.3" -> {"exp_avg_sq", 3}; an error for anything else.
std::pair<std::string, size_t> split_entry(const std::string& name, size_t parameters) {
  const size_t dot = name.rfind('.');
  const std::string digits = dot == std::string::npos ? std::string() : name.substr(dot + 1);
  RINGDP_CHECK(dot != std::string::npos && dot > 0 && !digits.empty() && digits.size() <= 9 &&
                   digits.find_first_not_of("0123456789") == std::string::npos,
               "ZeRO state: unexpected entry '", name, "' (expected <state>.<parameter index>)");
  const size_t index = std::stoul(digits);
  RINGDP_CHECK(index < parameters, "ZeRO state: '", name, "' but only ", parameters, " parameters");
  return {name.substr(0, dot), index};
}
}  // namespace

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<std::pair<std::string, Tensor>> params,
                                                 std::shared_ptr<comm::Communicator> comm,
                                                 OptimizerFactory make_optimizer)
    : params_(std::move(params)), comm_(std::move(comm)) {
  RINGDP_CHECK(!params_.empty(), "ZeRO: no parameters to optimize");
  const Tensor& first = params_.front().second;
  for (const auto& [name, p] : params_) {
    RINGDP_CHECK(p.dtype() == first.dtype() && p.device() == first.device(), "ZeRO: parameter '", name,
                 "' is ", dtype_name(p.dtype()), " on ", p.device().str(), ", the first is ",
                 dtype_name(first.dtype()), " on ", first.device().str(),
                 "; one flat buffer holds one dtype on one device");
    spans_.push_back({name, total_, total_ + p.numel()});
    total_ += p.numel();
  }
  const int N = comm_->size();
  shard_ = std::max<int64_t>((total_ + N - 1) / N, 1);
  flat_param_ = zeros({shard_ * N}, first.dtype(), first.device());
  flat_grad_ = zeros({shard_ * N}, first.dtype(), first.device());
  shard_param_ = flat_param_.flat_view(comm_->rank() * shard_, shard_);
  shard_grad_ = flat_grad_.flat_view(comm_->rank() * shard_, shard_);
  shard_param_.set_requires_grad(true);
  shard_param_.set_grad(shard_grad_);
  inner_ = make_optimizer({shard_param_});
  RINGDP_CHECK(inner_ != nullptr, "ZeRO: the optimizer factory returned nothing");
}

void ZeroRedundancyOptimizer::step() {
  const int64_t mine_begin = comm_->rank() * shard_, mine_end = mine_begin + shard_;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& [name, p] = params_[i];
    const Tensor grad = p.grad();
    RINGDP_CHECK(grad.defined(), "ZeRO: parameter '", name,
                 "' has no gradient; every parameter must take part in the loss");
    const ShardSpan& span = spans_[i];
    flat_grad_.flat_view(span.begin, p.numel()).reshape(p.shape()).copy_from(grad);
    // This rank's slice of the parameters, which are the truth between steps.
    const int64_t lo = std::max(span.begin, mine_begin), hi = std::min(span.end, mine_end);
    if (lo < hi) flat_param_.flat_view(lo, hi - lo).copy_from(p.flat_view(lo - span.begin, hi - lo));
  }
  using Clock = std::chrono::steady_clock;
  const auto scatter_start = Clock::now();
  if (comm_->size() > 1) {
    timeline::Scope span("zero", "reduce_scatter gradients");
    comm_->reduce_scatter(flat_grad_, shard_grad_, ReduceOp::avg);
  }
  const auto scatter_end = Clock::now();
  {
    timeline::Scope span("zero", "step shard");
    inner_->step();
  }
  const auto gather_start = Clock::now();
  if (comm_->size() > 1) {
    timeline::Scope span("zero", "all_gather parameters");
    comm_->all_gather(shard_param_, flat_param_);
  }
  comm_seconds_ =
      std::chrono::duration<double>(scatter_end - scatter_start + (Clock::now() - gather_start)).count();
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor p = params_[i].second;
    p.copy_from(flat_param_.flat_view(spans_[i].begin, p.numel()).reshape(p.shape()));
  }
  consolidated_ready_ = false;
}

void ZeroRedundancyOptimizer::zero_grad() {
  for (auto& [name, p] : params_) {
    Tensor grad = p.grad();
    if (grad.defined()) ops::fill_(grad, 0.0);
  }
}

void ZeroRedundancyOptimizer::consolidate_state_dict() {
  // Per kind of state, one tensor per parameter; emitted parameter by parameter, as the unsharded
  // optimizer orders its entries.
  std::vector<std::pair<std::string, std::vector<Tensor>>> kinds;
  for (const auto& [name, shard] : inner_->state_dict()) {
    auto& [kind, per_parameter] = kinds.emplace_back(split_entry(name, 1).first, std::vector<Tensor>{});
    const bool elementwise = shard.numel() == shard_ && shard.dtype() == flat_param_.dtype();
    Tensor whole = shard;
    if (elementwise) {
      whole = empty({shard_ * comm_->size()}, shard.dtype(), shard.device());
      if (comm_->size() > 1)
        comm_->all_gather(shard, whole);
      else
        whole.copy_from(shard);
    }
    for (size_t i = 0; i < params_.size(); ++i) {
      const Tensor& p = params_[i].second;
      per_parameter.push_back(elementwise
                                  ? whole.flat_view(spans_[i].begin, p.numel()).reshape(p.shape()).clone()
                                  : shard.clone());
    }
  }
  consolidated_.clear();
  for (size_t i = 0; i < params_.size(); ++i)
    for (const auto& [kind, per_parameter] : kinds)
      consolidated_.emplace_back(kind + "." + std::to_string(i), per_parameter[i]);
  consolidated_ready_ = true;
}

autograd::StateDict ZeroRedundancyOptimizer::state_dict() const {
  RINGDP_CHECK(consolidated_ready_,
               "ZeRO: state_dict() needs consolidate_state_dict() on every rank first (since the last step)");
  return consolidated_;
}

void ZeroRedundancyOptimizer::load_state_dict(const autograd::StateDict& state) {
  std::map<std::string, std::vector<const Tensor*>> kinds;
  for (const auto& [name, tensor] : state) {
    const auto [kind, index] = split_entry(name, params_.size());
    auto& per_parameter = kinds[kind];
    per_parameter.resize(params_.size(), nullptr);
    RINGDP_CHECK(per_parameter[index] == nullptr, "ZeRO state: '", name, "' appears twice");
    per_parameter[index] = &tensor;
  }
  autograd::StateDict shard_state;
  for (const auto& [kind, per_parameter] : kinds) {
    // Elementwise state has each parameter's shape and dtype; any other kind is one value shared
    // by all (a step count), since ZeRO steps every parameter together.
    bool elementwise = true;
    for (size_t i = 0; i < params_.size(); ++i) {
      RINGDP_CHECK(per_parameter[i] != nullptr, "ZeRO state: '", kind, "' has no entry for parameter ", i,
                   " ('", params_[i].first,
                   "'); ZeRO steps all parameters together, so each has all state or none");
      const Tensor& p = params_[i].second;
      elementwise =
          elementwise && per_parameter[i]->shape() == p.shape() && per_parameter[i]->dtype() == p.dtype();
    }
    if (!elementwise) {
      shard_state.emplace_back(kind + ".0", per_parameter.front()->clone());
      continue;
    }
    Tensor whole = zeros({shard_ * comm_->size()}, flat_param_.dtype(), flat_param_.device());
    for (size_t i = 0; i < params_.size(); ++i)
      whole.flat_view(spans_[i].begin, params_[i].second.numel())
          .copy_from(per_parameter[i]->reshape({per_parameter[i]->numel()}));
    shard_state.emplace_back(kind + ".0", whole.flat_view(comm_->rank() * shard_, shard_).clone());
  }
  inner_->load_state_dict(shard_state);
  consolidated_ready_ = false;
}

int64_t ZeroRedundancyOptimizer::state_bytes() const { return inner_->state_bytes(); }

int64_t ZeroRedundancyOptimizer::unsharded_state_bytes() const {
  // The wrapped optimizer's state is a whole number of S-element buffers; unsharded, of P.
  return inner_->state_bytes() / shard_ * total_;
}

}  // namespace ringdp::ddp

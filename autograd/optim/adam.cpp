// Implements autograd/optim/adam.h (the contract is documented there). Tested by
// tests/unit/test_autograd.cpp (hand-computed steps, state round trip, refused options).
#include "autograd/optim/adam.h"

#include <cmath>
#include <string>

#include "tensor/ops.h"

namespace ringdp::optim {

namespace {
// The three per-parameter entries, each a bit in the mask a fully loaded parameter has set.
constexpr const char* kEntries[] = {"exp_avg", "exp_avg_sq", "step"};
constexpr int kAllEntries = 0b111;

bool is_index(const std::string& digits) {
  return !digits.empty() && digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string::npos;
}
}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled)
    : params_(std::move(params)), state_(params_.size()), options_(options), decoupled_(decoupled) {
  // The ranges PyTorch's constructor checks, with the value named.
  RINGDP_CHECK(options.lr_ >= 0, name(), ": learning rate ", options.lr_, " is negative");
  RINGDP_CHECK(options.eps_ >= 0, name(), ": eps ", options.eps_, " is negative");
  RINGDP_CHECK(options.beta1_ >= 0 && options.beta1_ < 1, name(), ": beta1 ", options.beta1_,
               " is outside [0, 1)");
  RINGDP_CHECK(options.beta2_ >= 0 && options.beta2_ < 1, name(), ": beta2 ", options.beta2_,
               " is outside [0, 1)");
  RINGDP_CHECK(options.weight_decay_ >= 0, name(), ": weight decay ", options.weight_decay_, " is negative");
  RINGDP_CHECK(!options.amsgrad_, name(), ": amsgrad is not supported (ringdp implements plain ", name(),
               "; use amsgrad=False)");
}

void Adam::step() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    const Tensor grad = p.grad();
    if (!grad.defined()) continue;
    ParamState& s = state_[i];
    if (!s.exp_avg.defined()) {
      s.exp_avg = zeros(p.shape(), p.dtype(), p.device());
      s.exp_avg_sq = zeros(p.shape(), p.dtype(), p.device());
    }
    ++s.step;
    const kernels::AdamStep rule{.lr = options_.lr_,
                                 .beta1 = options_.beta1_,
                                 .beta2 = options_.beta2_,
                                 .eps = options_.eps_,
                                 .weight_decay = options_.weight_decay_,
                                 .decoupled = decoupled_,
                                 .step = s.step};
    ops::adam_step_(p, grad, s.exp_avg, s.exp_avg_sq, rule);
  }
}

void Adam::zero_grad() {
  for (Tensor& p : params_) {
    Tensor grad = p.grad();
    if (grad.defined()) ops::fill_(grad, 0.0);
  }
}

autograd::StateDict Adam::state_dict() const {
  autograd::StateDict out;
  for (size_t i = 0; i < state_.size(); ++i) {
    const ParamState& s = state_[i];
    if (!s.exp_avg.defined()) continue;
    const std::string index = std::to_string(i);
    out.emplace_back("exp_avg." + index, s.exp_avg);
    out.emplace_back("exp_avg_sq." + index, s.exp_avg_sq);
    out.emplace_back("step." + index, full({1}, static_cast<double>(s.step), DType::int64));
  }
  return out;
}

void Adam::load_entry(const std::string& entry, const Tensor& tensor, std::vector<int>& seen) {
  const size_t dot = entry.rfind('.');
  const std::string kind = dot == std::string::npos ? entry : entry.substr(0, dot);
  const std::string digits = dot == std::string::npos ? std::string() : entry.substr(dot + 1);
  int bit = -1;
  for (int k = 0; k < 3; ++k)
    if (kind == kEntries[k]) bit = k;
  RINGDP_CHECK(bit >= 0 && is_index(digits), name(), " state: unexpected entry '", entry,
               "' (expected exp_avg.<i>, exp_avg_sq.<i> or step.<i>, i a parameter index)");
  const size_t index = std::stoul(digits);
  RINGDP_CHECK(index < params_.size(), name(), " state: '", entry, "' but only ", params_.size(),
               " parameters");
  RINGDP_CHECK(!(seen[index] & (1 << bit)), name(), " state: '", entry, "' appears twice");
  seen[index] |= 1 << bit;
  const Tensor& p = params_[index];
  ParamState& s = state_[index];
  if (bit == 2) {
    RINGDP_CHECK(tensor.numel() == 1, name(), " state: '", entry, "' holds ", tensor.numel(),
                 " values, not 1");
    const double step = tensor.to(Device::cpu()).item();
    RINGDP_CHECK(step >= 1 && step == std::floor(step), name(), " state: '", entry, "' is ", step,
                 ", not a step count of at least 1");
    s.step = static_cast<int64_t>(step);
    return;
  }
  RINGDP_CHECK(tensor.shape() == p.shape(), name(), " state: '", entry, "' has shape ",
               shape_str(tensor.shape()), ", parameter has ", shape_str(p.shape()));
  Tensor& moment = bit == 0 ? s.exp_avg : s.exp_avg_sq;
  moment = empty(p.shape(), p.dtype(), p.device());
  moment.copy_from(tensor);
}

void Adam::load_state_dict(const autograd::StateDict& state) {
  state_.assign(params_.size(), ParamState{});
  std::vector<int> seen(params_.size(), 0);
  for (const auto& [entry, tensor] : state) load_entry(entry, tensor, seen);
  for (size_t i = 0; i < seen.size(); ++i)
    RINGDP_CHECK(seen[i] == 0 || seen[i] == kAllEntries, name(), " state: parameter ", i,
                 " has only some of exp_avg, exp_avg_sq and step");
}

int64_t Adam::state_bytes() const {
  int64_t bytes = 0;
  for (const ParamState& s : state_)
    if (s.exp_avg.defined()) bytes += static_cast<int64_t>(s.exp_avg.nbytes() + s.exp_avg_sq.nbytes());
  return bytes;
}

}  // namespace ringdp::optim

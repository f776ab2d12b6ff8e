// Implements apps/train/optimizer_setup.h (the contract is documented there). Tested by
// tests/cli/train.sh (optimizer, zero and resume cases) and tests/torch/test_adam.sh.
#include "apps/train/optimizer_setup.h"

#include <cstdio>
#include <string>
#include <vector>

#include "autograd/optim/adam.h"
#include "autograd/optim/sgd.h"

namespace ringdp::train {

void check_optimizer_flags(const TrainConfig& config) {
  const std::string& o = config.optimizer;
  RINGDP_CHECK(o == "sgd" || o == "adam" || o == "adamw", "--optimizer '", o,
               "' is not an optimizer: expected sgd, adam or adamw");
  RINGDP_CHECK(o == "sgd" || config.momentum == 0, "--momentum ", config.momentum,
               " applies to --optimizer sgd only; ", o, " takes --betas");
  RINGDP_CHECK(o != "sgd" || !config.betas_given, "--betas applies to --optimizer adam or adamw, not sgd");
  RINGDP_CHECK(o != "sgd" || !config.eps_given, "--eps applies to --optimizer adam or adamw, not sgd");
  RINGDP_CHECK(!config.explain || config.zero || o == "sgd",
               "--explain narrates DDP's all-reduce and an SGD update; with --optimizer ", o,
               " add --zero (which narrates ZeRO's sharded step) or use --optimizer sgd");
}

namespace {
std::unique_ptr<optim::Optimizer> make_plain(const TrainConfig& config, std::vector<Tensor> params) {
  if (config.optimizer == "sgd")
    return std::make_unique<optim::SGD>(
        std::move(params),
        optim::SGDOptions(config.lr).momentum(config.momentum).weight_decay(config.weight_decay));
  const auto options = optim::AdamOptions(config.lr)
                           .betas(config.beta1, config.beta2)
                           .eps(config.eps)
                           .weight_decay(config.weight_decay);
  if (config.optimizer == "adamw") return std::make_unique<optim::AdamW>(std::move(params), options);
  return std::make_unique<optim::Adam>(std::move(params), options);
}
}  // namespace

TrainOptimizer make_optimizer(const TrainConfig& config, autograd::Module& model,
                              const std::shared_ptr<comm::Communicator>& comm) {
  check_optimizer_flags(config);
  if (!config.zero) return {make_plain(config, model.parameters()), nullptr};
  std::vector<std::pair<std::string, Tensor>> trainable;
  for (auto& named : model.named_parameters())
    if (named.second.requires_grad()) trainable.push_back(std::move(named));
  auto zero = std::make_unique<ddp::ZeroRedundancyOptimizer>(
      std::move(trainable), comm, [config](std::vector<Tensor> shard) { return make_plain(config, shard); });
  ddp::ZeroRedundancyOptimizer* raw = zero.get();
  return {std::move(zero), raw};
}

autograd::StateDict broadcast_state_dict(comm::Communicator& comm, const autograd::StateDict& state,
                                         Device device) {
  // The header, as int64 values: entries, then per entry its name's length and characters, dtype
  // code, rank and dimensions. No state (a fresh start, SGD without momentum): its length, 0, is
  // the only broadcast, as the momentum count was before Adam.
  std::vector<double> header;
  if (comm.rank() == 0 && !state.empty()) {
    header.push_back(static_cast<double>(state.size()));
    for (const auto& [name, tensor] : state) {
      header.push_back(static_cast<double>(name.size()));
      for (unsigned char c : name) header.push_back(c);
      header.push_back(static_cast<double>(static_cast<int>(tensor.dtype())));
      header.push_back(static_cast<double>(tensor.shape().size()));
      for (int64_t d : tensor.shape()) header.push_back(static_cast<double>(d));
    }
  }
  Tensor length = full({1}, static_cast<double>(header.size()), DType::int64, device);
  comm.broadcast(length, 0);
  const auto n = static_cast<int64_t>(length.to(Device::cpu()).item());
  if (n == 0) return {};
  Tensor words =
      comm.rank() == 0 ? from_vector(header, {n}, DType::int64).to(device) : zeros({n}, DType::int64, device);
  comm.broadcast(words, 0);
  const std::vector<double> h = words.to(Device::cpu()).to_vector();
  autograd::StateDict out;
  size_t at = 1;
  for (int64_t e = 0; e < static_cast<int64_t>(h[0]); ++e) {
    std::string name(static_cast<size_t>(h[at++]), ' ');
    for (char& c : name) c = static_cast<char>(h[at++]);
    const auto dtype = static_cast<DType>(static_cast<int>(h[at++]));
    Shape shape(static_cast<size_t>(h[at++]));
    for (int64_t& d : shape) d = static_cast<int64_t>(h[at++]);
    Tensor value = comm.rank() == 0 ? state[e].second.to(device).clone() : zeros(shape, dtype, device);
    comm.broadcast(value, 0);
    out.emplace_back(std::move(name), std::move(value));
  }
  return out;
}

autograd::StateDict checkpoint_state(TrainOptimizer& opt) {
  if (opt.zero) opt.zero->consolidate_state_dict();
  return opt.optimizer->state_dict();
}

void report_zero_memory(const TrainConfig& config, comm::Communicator& comm,
                        const ddp::ZeroRedundancyOptimizer& zero) {
  const int N = comm.size();
  Tensor mine = full({1}, static_cast<double>(zero.state_bytes()), DType::int64, comm.device());
  Tensor all = zeros({N}, DType::int64, comm.device());
  comm.all_gather(mine, all);
  if (comm.rank() != 0) return;
  const std::vector<double> bytes = all.to(Device::cpu()).to_vector();
  std::string per_rank;
  for (int r = 0; r < N; ++r)
    per_rank += (r ? ", " : "") + std::to_string(static_cast<int64_t>(bytes[r])) + " B";
  const int64_t unsharded = zero.unsharded_state_bytes();
  std::printf(
      "zero: %lld parameters in %d shards of %lld (%lld padding); %s state per rank: %s "
      "(unsharded: %lld B on every rank; 1/%d of it is %.1f B)\n",
      static_cast<long long>(zero.total_elements()), N, static_cast<long long>(zero.shard_elements()),
      static_cast<long long>(zero.shard_elements() * N - zero.total_elements()), config.optimizer.c_str(),
      per_rank.c_str(), static_cast<long long>(unsharded), N, static_cast<double>(unsharded) / N);
  std::fflush(stdout);
}

}  // namespace ringdp::train

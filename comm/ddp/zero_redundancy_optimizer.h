// ZeroRedundancyOptimizer (ZeRO stage 1 with sharded gradient reduction): each of N ranks keeps the
// optimizer state of 1/N of the parameters, so Adam's two moments cost 2·P/N elements per rank
// instead of 2·P.
//
// Flat shards. The trainable parameters, in registration order, are laid end to end in one flat
// buffer of P elements, padded with zeros to N·S elements, S = ceil(P / N) (the collectives need
// equal chunks). Rank r owns elements [r·S, (r+1)·S): a shard boundary may fall inside a parameter,
// and the last ranks' shards may hold padding only. This differs from PyTorch's ZeRO, which gives
// each rank whole parameters (greedy by size) and broadcasts them: with whole parameters one large
// layer unbalances the ranks and the gradients cannot be reduce-scattered in equal chunks. Flat
// shards balance to within one element and make the step one reduce-scatter and one all-gather,
// which is possible because the optimizers here update every element from that element's own
// gradient and state only (SGD, SGD with momentum, Adam, AdamW: kernels/sgd.h, kernels/adam.h); an
// optimizer needing a whole parameter (LAMB's per-layer norms) would not fit this layout.
//
// One step:
//   1. each parameter's local gradient is copied into the flat gradient buffer (padding stays 0);
//   2. reduce_scatter(avg): rank r receives the average over ranks of its shard's gradient, the
//      same values an all-reduce would give for those elements, at half the traffic;
//   3. the wrapped optimizer steps the shard (a 1-D view of the flat parameter buffer whose .grad is
//      the reduced shard): its state exists for these S elements only;
//   4. all_gather in place: every rank gets every shard's new values, and copies them back into the
//      parameters. Padding elements have zero gradient and zero value, and stay zero.
// The parameters are the truth between steps: step() first copies this rank's slice of them into
// the flat buffer, so a parameter loaded or changed outside is what is stepped.
//
// Gradient synchronisation is ZeRO's job: DDP wrapping the same model runs with
// DdpOptions::sync_gradients = false (it still broadcasts rank 0's parameters at construction and
// checks every rank's model matches), so gradients are reduced once, by the reduce-scatter here.
// Tested by tests/mpi/test_zero.cpp (equal to DDP + the same optimizer, 1-4 ranks, sizes not
// divisible by N).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/optim/optimizer.h"
#include "comm/communicator.h"

namespace ringdp::ddp {

/// Makes the optimizer that steps one shard (a single 1-D tensor), e.g.
/// [](std::vector<Tensor> p) { return std::make_unique<optim::Adam>(std::move(p), options); }
using OptimizerFactory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

/// Where one parameter's elements fall in the flat buffer, and which ranks own them.
struct ShardSpan {
  std::string parameter;
  int64_t begin = 0, end = 0;  ///< elements [begin, end) of the flat buffer
};

class ZeroRedundancyOptimizer : public optim::Optimizer {
 public:
  /// `params`: the model's trainable parameters by name, the same on every rank (one dtype, one
  /// device). Collective only in step() and consolidate_state_dict().
  ZeroRedundancyOptimizer(std::vector<std::pair<std::string, Tensor>> params,
                          std::shared_ptr<comm::Communicator> comm, OptimizerFactory make_optimizer);

  /// Collective: reduce-scatter the gradients, step this rank's shard, all-gather the parameters.
  /// Every parameter must have a gradient.
  void step() override;
  void zero_grad() override;
  /// Collective: gathers every rank's shard of the state into the layout the unsharded optimizer
  /// would have over the same parameters ("exp_avg.<i>" shaped as parameter i, ...), held on every
  /// rank for state_dict(). Elementwise state (the shard's shape and dtype) is gathered and split by
  /// parameter; any other entry (a step count) is the same on every rank and copied to each parameter.
  void consolidate_state_dict();
  /// The state gathered by the last consolidate_state_dict() (PyTorch's rule): an error before one.
  autograd::StateDict state_dict() const override;
  /// `state` in the unsharded optimizer's layout (a checkpoint of either kind), on every rank:
  /// each rank keeps its shard.
  void load_state_dict(const autograd::StateDict& state) override;
  /// This rank's optimizer state: its shard's.
  int64_t state_bytes() const override;
  /// What the wrapped optimizer would hold unsharded on every rank (the same state for all P).
  int64_t unsharded_state_bytes() const;

  /// Seconds the last step spent in its reduce-scatter and all-gather.
  double last_comm_seconds() const { return comm_seconds_; }
  int64_t total_elements() const { return total_; }  ///< P
  int64_t shard_elements() const { return shard_; }  ///< S = ceil(P / N)
  /// Each parameter's span of the flat buffer, in order; rank r owns [r·S, (r+1)·S).
  const std::vector<ShardSpan>& layout() const { return spans_; }

 private:
  std::vector<std::pair<std::string, Tensor>> params_;
  std::shared_ptr<comm::Communicator> comm_;
  std::vector<ShardSpan> spans_;
  int64_t total_ = 0, shard_ = 0;
  Tensor flat_param_, flat_grad_;  // N·S elements each
  Tensor shard_param_, shard_grad_;  // this rank's S-element views of them
  std::unique_ptr<optim::Optimizer> inner_;
  autograd::StateDict consolidated_;
  bool consolidated_ready_ = false;
  double comm_seconds_ = 0;
};

}  // namespace ringdp::ddp

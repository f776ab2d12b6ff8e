// ringdp-train --explain: one real data-parallel step, told by rank 0 as it happens on every
// rank: the parameter broadcast, each gradient hook, why `auto` chose each bucket's algorithm,
// one gradient element through every step of the all-reduce, the average and the SGD update.
// docs/walkthrough.md follows its output; tests/cli/train.sh (case explain) checks its values.
#pragma once

#include <memory>

#include "apps/train/trainer.h"

namespace ringdp::train {

/// Runs the step and prints the story on rank 0; returns 0. Host tensors only: the values are
/// read from memory as each step of the collective begins.
int run_explain(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& communicator);
/// --explain --zero: the flat layout, each rank's shard boundaries, one element through the
/// reduce-scatter, the owner's step and the all-gather (apps/train/explain_zero.cpp).
int run_explain_zero(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& communicator);
/// --explain --uneven join: one epoch on unpadded shards, each step's contributions to one element
/// of bucket 0 (a joined rank's zeros), the divisor and the average (apps/train/explain_join.cpp).
int run_explain_join(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& communicator);
/// --explain --comm-hook: one step with the hook, and one bucket's values as the hook changed
/// them: rank by rank before, through the cast (fp16, bf16), after; against the exact average.
/// apps/train/explain_hook.cpp.
int run_explain_hook(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& communicator);

}  // namespace ringdp::train

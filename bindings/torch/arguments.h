// torch's arguments as ringdp's collectives take them: the checks every call shares (one tensor,
// one dtype, the sizes the collective implies) and the packing of torch's lists into the one
// buffer a ringdp collective reads or writes. A failed check is a ringdp::Error naming the
// argument, which ProcessGroupRingdp::issue turns into torch's RuntimeError. Tested by tests/torch/.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace ringdp_torch {

/// The one tensor of a call: the backend takes one per call (one device per process).
const at::Tensor& only(const std::vector<at::Tensor>& tensors, const char* name);
/// The same dtype as `like` and `numel` elements, or an Error naming `what`.
void check_like(const at::Tensor& t, const at::Tensor& like, int64_t numel, const char* what);
/// Copies consecutive pieces of `flat` into `targets`, each piece its target's size: how torch's
/// list outputs are filled from the one buffer a ringdp collective writes.
void unpack(const at::Tensor& flat, const std::vector<at::Tensor>& targets);
/// The coalesced forms' arguments: as many of each, one dtype, and each of `whole` `size` times
/// its `part` (the all-gather's outputs and inputs, the reduce-scatter's inputs and outputs).
void check_coalesced(const std::vector<at::Tensor>& whole, const std::vector<at::Tensor>& part, int size,
                     const char* name);
/// Element counts of all_to_all_single's splits (rows of dimension 0); no splits: equal rows per rank.
std::vector<int64_t> split_counts(const std::vector<int64_t>& splits, const at::Tensor& t, int size,
                                  const char* what);

}  // namespace ringdp_torch

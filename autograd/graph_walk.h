// Which leaves an output depends on: the walk DistributedDataParallel's find_unused_parameters
// makes after each forward (PyTorch's Reducer does the same from the forward's outputs), so that
// parameters the graph never reaches can be marked ready before backward waits for them.
// Tested in tests/unit/test_autograd.cpp.
#pragma once

#include <unordered_set>

#include "tensor/tensor.h"

namespace ringdp::autograd {

/// The ids (Tensor::id()) of every leaf that requires grad and that `output`'s graph reaches,
/// `output` itself included when it is such a leaf. Each node is visited once.
std::unordered_set<const void*> reachable_leaves(const Tensor& output);

}  // namespace ringdp::autograd

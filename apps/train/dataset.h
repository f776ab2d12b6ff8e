// The trainer's data: a synthetic regression set y = X·w* + b* + noise generated from a seed
// (so every rank builds the same set and takes its own shard), or a numeric CSV file (csv.h).
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace ringdp::train {

struct Dataset {
  Tensor features;  ///< [samples, features], float64 on the host
  Tensor targets;  ///< [samples, 1]
};

/// samples × features, w* ~ N(0, 1), b* = 0.5, noise ~ N(0, 0.1²), all from `seed`.
Dataset synthetic_dataset(int64_t samples, int64_t features, uint64_t seed);

/// Rows `indices` of the data set, as `dtype` tensors on `device`.
void gather_batch(const Dataset& data, const std::vector<int64_t>& indices, DType dtype, Device device,
                  Tensor& x, Tensor& y);

}  // namespace ringdp::train

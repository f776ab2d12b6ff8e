// Which gradient goes into which bucket: a pure function of the parameters' sizes, dtypes and
// devices (PyTorch's compute_bucket_assignment_by_size plays this part), so it is tested without
// MPI or autograd: tests/unit/test_bucket_assignment.cpp.
//
// Parameters are taken in reverse registration order, the order in which backward finishes their
// gradients, and packed greedily: a parameter opens a new bucket when it would push the current
// one past its cap, or when its dtype or device differs from the bucket's (a bucket is one flat
// buffer, reduced by one collective). The first bucket has a cap of its own, small, so that the
// first all-reduce starts early in backward. A parameter larger than the cap gets a bucket alone.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"

namespace ringdp::ddp {

/// What the assignment needs to know of one parameter.
struct BucketParameter {
  int64_t bytes;
  DType dtype;
  Device device;
};

/// Parameter indices (into `parameters`, registration order) per bucket, in launch order.
/// Caps are in bytes; first_bucket_cap_bytes applies to bucket 0, bucket_cap_bytes to the rest.
std::vector<std::vector<int>> assign_buckets(std::span<const BucketParameter> parameters,
                                             double bucket_cap_bytes, double first_bucket_cap_bytes);

}  // namespace ringdp::ddp

// Which gradient goes into which bucket: a pure function of the parameters' sizes, dtypes and
// devices (PyTorch's compute_bucket_assignment_by_size plays this part), so it is tested without
// MPI or autograd: tests/unit/test_bucket_assignment.cpp.
//
// The rule is PyTorch's (compute_bucket_assignment_by_size in reducer.cpp, 1.13): parameters are
// taken in reverse registration order, the order in which backward finishes their gradients; each
// (dtype, device) group has its own open bucket, because a bucket is one flat buffer reduced by one
// collective; a parameter is added to its group's bucket first, and the bucket is closed once its
// size reaches the cap, so a bucket may end above its cap (a parameter larger than the cap closes
// the bucket it joins). Each group's first bucket has a cap of its own, small, so that the first
// all-reduce can start early in backward. Buckets are launched in the order their last gradient
// arrives.
//
// The first cap is min(first_bucket_mb, bucket_cap_mb) (comm/ddp/reducer.cpp),
// so a small --bucket-mb gives small buckets throughout; PyTorch 1.13 keeps its first bucket at
// 1 MiB whatever bucket_cap_mb says.
// Where PyTorch differs: its first iteration runs the rule over registration order and reverses
// the list, so its small bucket holds the first layers and is launched last; after that iteration
// it rebuilds the buckets in the order gradients arrived, which is the layout ringdp builds from
// the start (when gradients arrive in reverse registration order, as in a sequential model).
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

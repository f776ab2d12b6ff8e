// DDP's bucket assignment (comm/ddp/bucket_assignment.h) as a pure function: no MPI, no autograd.
#include <catch2/catch.hpp>

#include <vector>

#include "comm/ddp/bucket_assignment.h"

using namespace ringdp;
using ringdp::ddp::assign_buckets;
using ringdp::ddp::BucketParameter;
using Buckets = std::vector<std::vector<int>>;

namespace {
BucketParameter f32(int64_t bytes) { return {bytes, DType::float32, Device::cpu()}; }
}  // namespace

TEST_CASE("buckets take parameters in reverse registration order", "[ddp][buckets]") {
  const std::vector<BucketParameter> params{f32(40), f32(4), f32(400), f32(4)};
  CHECK(assign_buckets(params, 1e9, 1e9) == Buckets{{3, 2, 1, 0}});
  CHECK(assign_buckets({}, 100, 100).empty());
}

TEST_CASE("a bucket closes when the next parameter would exceed its cap", "[ddp][buckets]") {
  const std::vector<BucketParameter> params{f32(30), f32(30), f32(30), f32(30), f32(30)};
  // Exactly at the cap still fits; one byte over opens a new bucket.
  CHECK(assign_buckets(params, 60, 60) == Buckets{{4, 3}, {2, 1}, {0}});
  CHECK(assign_buckets(params, 59, 59) == Buckets{{4}, {3}, {2}, {1}, {0}});
  CHECK(assign_buckets(params, 90, 90) == Buckets{{4, 3, 2}, {1, 0}});
}

TEST_CASE("the first bucket has its own, smaller cap", "[ddp][buckets]") {
  const std::vector<BucketParameter> params{f32(10), f32(10), f32(10), f32(10), f32(10), f32(10)};
  CHECK(assign_buckets(params, 40, 10) == Buckets{{5}, {4, 3, 2, 1}, {0}});
  CHECK(assign_buckets(params, 30, 20) == Buckets{{5, 4}, {3, 2, 1}, {0}});
}

TEST_CASE("a parameter larger than the cap gets a bucket of its own", "[ddp][buckets]") {
  const std::vector<BucketParameter> params{f32(8), f32(1000), f32(8)};
  CHECK(assign_buckets(params, 100, 100) == Buckets{{2}, {1}, {0}});
  CHECK(assign_buckets(std::vector<BucketParameter>{f32(1000)}, 100, 10) == Buckets{{0}});
}

TEST_CASE("dtype and device changes open a new bucket even under the cap", "[ddp][buckets]") {
  const std::vector<BucketParameter> params{{8, DType::float64, Device::cpu()},
                                            f32(4),
                                            f32(4),
                                            {4, DType::float32, Device::cuda(0)},
                                            {4, DType::float32, Device::cuda(1)}};
  CHECK(assign_buckets(params, 1e9, 1e9) == Buckets{{4}, {3}, {2, 1}, {0}});
  // Back to an earlier dtype is a new bucket too: a bucket is one contiguous run.
  const std::vector<BucketParameter> mixed{f32(4), {2, DType::bfloat16, Device::cpu()}, f32(4)};
  CHECK(assign_buckets(mixed, 1e9, 1e9) == Buckets{{2}, {1}, {0}});
}

TEST_CASE("PyTorch's defaults on a small model: one bucket", "[ddp][buckets]") {
  // Linear(10 -> 1): weight 40 B, bias 4 B; 25 MiB and 1 MiB caps.
  CHECK(assign_buckets(std::vector<BucketParameter>{f32(40), f32(4)}, 25.0 * 1024 * 1024, 1024.0 * 1024) ==
        Buckets{{1, 0}});
}

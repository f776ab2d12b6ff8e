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

TEST_CASE("a bucket closes once its size reaches the cap, after the parameter that reached it",
          "[ddp][buckets]") {
  const std::vector<BucketParameter> params{f32(30), f32(30), f32(30), f32(30), f32(30)};
  // PyTorch's rule: add, then close at >= cap; a bucket may end above its cap (60 B under 59).
  CHECK(assign_buckets(params, 60, 60) == Buckets{{4, 3}, {2, 1}, {0}});
  CHECK(assign_buckets(params, 59, 59) == Buckets{{4, 3}, {2, 1}, {0}});
  CHECK(assign_buckets(params, 61, 61) == Buckets{{4, 3, 2}, {1, 0}});
  CHECK(assign_buckets(params, 90, 90) == Buckets{{4, 3, 2}, {1, 0}});
  CHECK(assign_buckets(params, 30, 30) == Buckets{{4}, {3}, {2}, {1}, {0}});
}

TEST_CASE("the first bucket has its own, smaller cap", "[ddp][buckets]") {
  const std::vector<BucketParameter> params{f32(10), f32(10), f32(10), f32(10), f32(10), f32(10)};
  CHECK(assign_buckets(params, 40, 10) == Buckets{{5}, {4, 3, 2, 1}, {0}});
  CHECK(assign_buckets(params, 30, 20) == Buckets{{5, 4}, {3, 2, 1}, {0}});
}

TEST_CASE("a parameter larger than the cap closes the bucket it joins", "[ddp][buckets]") {
  const std::vector<BucketParameter> params{f32(8), f32(1000), f32(8)};
  CHECK(assign_buckets(params, 100, 100) == Buckets{{2, 1}, {0}});
  CHECK(assign_buckets(std::vector<BucketParameter>{f32(1000)}, 100, 10) == Buckets{{0}});
}

TEST_CASE("dtype and device changes open a new bucket even under the cap", "[ddp][buckets]") {
  const std::vector<BucketParameter> params{{8, DType::float64, Device::cpu()},
                                            f32(4),
                                            f32(4),
                                            {4, DType::float32, Device::cuda(0)},
                                            {4, DType::float32, Device::cuda(1)}};
  CHECK(assign_buckets(params, 1e9, 1e9) == Buckets{{4}, {3}, {2, 1}, {0}});
  // Each (dtype, device) group keeps its own open bucket, as PyTorch's per-key accumulators do:
  // float32 parameters on either side of a bfloat16 one share a bucket, launched after the
  // bfloat16 one because its last gradient comes later.
  const std::vector<BucketParameter> mixed{f32(4), {2, DType::bfloat16, Device::cpu()}, f32(4)};
  CHECK(assign_buckets(mixed, 1e9, 1e9) == Buckets{{1}, {2, 0}});
}

TEST_CASE("each dtype group has its own first, smaller cap", "[ddp][buckets]") {
  const auto bf16 = [](int64_t bytes) { return BucketParameter{bytes, DType::bfloat16, Device::cpu()}; };
  const std::vector<BucketParameter> params{f32(10), bf16(10), f32(10), bf16(10), f32(10), bf16(10)};
  // Processed 5 (bf16), 4, 3, 2, 1, 0: each group closes its first bucket at 10 B, then at 20 B.
  CHECK(assign_buckets(params, 20, 10) == Buckets{{5}, {4}, {3, 1}, {2, 0}});
}

TEST_CASE("the timeline model of docs/ddp.md: PyTorch's 3 buckets", "[ddp][buckets]") {
  // Linear 10->1024->1024->1024->1: weight then bias per layer, float32, --bucket-mb 2.
  const std::vector<BucketParameter> params{
      f32(10 * 1024 * 4),   f32(1024 * 4), f32(1024 * 1024 * 4), f32(1024 * 4),
      f32(1024 * 1024 * 4), f32(1024 * 4), f32(1024 * 4),        f32(4)};
  CHECK(assign_buckets(params, 2.0 * 1024 * 1024, 1024.0 * 1024) == Buckets{{7, 6, 5, 4}, {3, 2}, {1, 0}});
}

TEST_CASE("PyTorch's defaults on a small model: one bucket", "[ddp][buckets]") {
  // Linear(10 -> 1): weight 40 B, bias 4 B; 25 MiB and 1 MiB caps.
  CHECK(assign_buckets(std::vector<BucketParameter>{f32(40), f32(4)}, 25.0 * 1024 * 1024, 1024.0 * 1024) ==
        Buckets{{1, 0}});
}

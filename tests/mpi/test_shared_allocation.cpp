// Communicator::allocate_shared and the direct all-reduce over its tensors
// (comm/algorithms/all_reduce_shared_direct.cpp): every dtype with every op that applies, counts 0, 1, N−1,
// N+1, 1031 and 1,000,003, in place and out of place, `auto` and shared_memory, against
// tests/support/mpi_test.h's reference; the same bits on every rank; and the refusals: shapes
// that differ across ranks, shared tensors on some ranks and plain ones on others, places and
// counts that differ, groups. Each refusal is an Error on every rank, after which the ranks go on.
#include <catch2/catch.hpp>

#include <cstring>
#include <sstream>

#include "tests/support/mpi_test.h"

using namespace ringdp;
using namespace ringdp::testing;
using Catch::Contains;
using comm::Algorithm;

namespace {

const auto& kDtypes = kAllDtypes;
const auto& kOps = kAllOps;
constexpr int64_t kLargest = 1000003;

bool applies(ReduceOp op, DType dtype) { return is_floating(dtype) ? !is_bitwise(op) : op != ReduceOp::avg; }

// Large counts for one op per dtype (and float32 avg): the steps do not depend on the op.
bool worth_running(int64_t count, ReduceOp op, DType dtype) {
  if (count < 100000) return true;
  return op == ReduceOp::sum || (dtype == DType::float32 && op == ReduceOp::avg);
}

// FNV-1a of the tensor's bytes.
int64_t bits_hash(const Tensor& t) {
  uint64_t h = 1469598103934665603ull;
  const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
  for (size_t i = 0; i < t.nbytes(); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return static_cast<int64_t>(h >> 1);
}

// Whether the ranks' bits differ: over x, 20 bits of each rank's hash, (Σx)² = N·Σx² exactly when
// every x is the same (Cauchy–Schwarz). Sums through MPI directly, not the code under test.
bool bits_differ(const Tensor& t) {
  const int64_t x = bits_hash(t) & 0xfffff, sum = global_sum(x);
  return sum * sum != world().size() * global_sum(x * x);
}

// The first element of views over the big shared buffers, so that one allocation serves every case.
Tensor view(const Tensor& buffer, int64_t first, int64_t count, DType dtype) {
  return Tensor::borrow(static_cast<char*>(buffer.data_ptr()) + first * 8, {count}, dtype);
}

}  // namespace

TEST_CASE("allocate_shared: the direct all_reduce, every dtype, op and count", "[shared]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  Tensor buffer = comm.allocate_shared({kLargest + 8}, DType::float64);
  Tensor second = comm.allocate_shared({kLargest + 8}, DType::float64);
  REQUIRE(buffer.device().is_cpu());
  REQUIRE(buffer.to_vector() == std::vector<double>(kLargest + 8, 0.0));  // zeroed
  std::vector<int64_t> counts = {0, 1, N + 1, 1031, kLargest};
  if (N > 1) counts.push_back(N - 1);
  int64_t wrong = 0, other_bits = 0;
  for (Algorithm algo : {Algorithm::automatic, Algorithm::shared_memory})
    for (DType dtype : kDtypes)
      for (ReduceOp op : kOps)
        for (int64_t count : counts)
          for (bool in_place : {true, false}) {
            if (!applies(op, dtype) || !worth_running(count, op, dtype)) continue;
            // An odd start (3 doubles in) on half the cases: a place other than the allocation's base.
            const int64_t first = count % 2 ? 3 : 0;
            Tensor input = view(buffer, first, count, dtype);
            fill_input(input, rank, op);
            Tensor output = in_place ? input : view(second, first, count, dtype);
            if (!in_place) output.copy_from(full({count}, -77.0, dtype));
            comm.all_reduce(input, output, op, {.algorithm = algo});
            const int64_t here = count_wrong(output, N, op);
            Tensor pristine = empty({count}, dtype);
            fill_input(pristine, rank, op);
            const int64_t touched = in_place ? 0 : input.to_vector() != pristine.to_vector();
            const int64_t differs = bits_differ(output);
            if (here || touched || differs)
              UNSCOPED_INFO("algo=" << comm::algorithm_name(algo) << " dtype=" << dtype_name(dtype)
                                    << " op=" << reduce_op_name(op) << " count=" << count
                                    << (in_place ? " in place" : " out of place") << ": " << here
                                    << " wrong, input changed " << touched << ", bits differ " << differs);
            wrong += here + touched;
            other_bits += differs;
          }
  REQUIRE(global_sum(wrong) == 0);
  REQUIRE(other_bits == 0);
}

TEST_CASE("allocate_shared: asynchronous, and a shared input with a plain output", "[shared]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  Tensor shared = comm.allocate_shared({4, 257}, DType::float32);
  REQUIRE(shared.shape() == Shape{4, 257});
  fill_input(shared, rank, ReduceOp::sum);
  comm.all_reduce(shared, ReduceOp::sum, {.async = true}).wait();
  CHECK(global_sum(count_wrong(shared, N, ReduceOp::sum)) == 0);
  // Only one of the two in a shared allocation: the slotted path, on every rank alike.
  fill_input(shared, rank, ReduceOp::max);
  Tensor plain = zeros({4, 257}, DType::float32);
  comm.all_reduce(shared, plain, ReduceOp::max);
  CHECK(global_sum(count_wrong(plain, N, ReduceOp::max)) == 0);
}

TEST_CASE("allocate_shared: refusals are errors on every rank, and the ranks go on", "[shared][errors]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  if (N > 1) {
    const std::string last = std::to_string(N - 1);
    REQUIRE_THROWS_WITH(comm.allocate_shared({rank == N - 1 ? 5 : 4, 2}, DType::float32),
                        Contains("rank " + last +
                                 " passed shape [5, 2] float32 but rank 0 passed shape [4, 2] "
                                 "float32; every rank must pass the same shape and dtype"));
    REQUIRE_THROWS_WITH(
        comm.allocate_shared({6}, rank == N - 1 ? DType::int32 : DType::float32),
        Contains("rank " + last + " passed shape [6] int32 but rank 0 passed shape [6] float32"));
    Tensor shared = comm.allocate_shared({100}, DType::float32);
    // Rank 0 passes a plain tensor, the others shared ones: the slotted and the direct path meet.
    Tensor plain = zeros({100}, DType::float32);
    REQUIRE_THROWS_WITH(comm.all_reduce(rank == 0 ? plain : shared),
                        Contains("every rank must pass shared tensors, or none"));
    // The same allocation at another place on the last rank, then another count there.
    Tensor moved = shared.flat_view(rank == N - 1 ? 1 : 0, 90);
    REQUIRE_THROWS_WITH(comm.all_reduce(moved),
                        Contains("input at byte " + std::string(rank == N - 1 ? "4" : "0")) &&
                            Contains("every rank must pass the same place"));
    Tensor shorter = shared.flat_view(0, rank == N - 1 ? 80 : 90);
    REQUIRE_THROWS_WITH(comm.all_reduce(shorter), Contains("every rank must pass the same place"));
  }
  std::vector<int> everyone(static_cast<size_t>(N));
  for (int r = 0; r < N; ++r) everyone[static_cast<size_t>(r)] = r;
  auto group = comm.group(everyone);
  REQUIRE_THROWS_WITH(group->allocate_shared({4}, DType::float32), Contains("a group has none"));
  // The ranks are still in step: a shared and a plain all-reduce come out right.
  Tensor after = comm.allocate_shared({1031}, DType::int64);
  fill_input(after, rank, ReduceOp::sum);
  comm.all_reduce(after);
  Tensor plain = empty({1031}, DType::int64);
  fill_input(plain, rank, ReduceOp::sum);
  comm.all_reduce(plain);
  REQUIRE(global_sum(count_wrong(after, N, ReduceOp::sum) + count_wrong(plain, N, ReduceOp::sum)) == 0);
}

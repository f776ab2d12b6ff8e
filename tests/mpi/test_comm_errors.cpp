// Bad input raises a ringdp::Error naming the bad value on every rank, before any message
// moves, so no rank is left waiting. Each case runs on all ranks with the same bad input.
#include <catch2/catch.hpp>

#include "tests/support/mpi_test.h"

using namespace ringdp;
using namespace ringdp::testing;
using Catch::Contains;

TEST_CASE("bad arguments are errors on every rank, with no communication", "[errors]") {
  auto& comm = world();
  const int N = comm.size();
  Tensor f = zeros({8}), d = zeros({8}, DType::float64), i32 = zeros({8}, DType::int32);
  REQUIRE_THROWS_WITH(comm.reduce(f, N), Contains("root " + std::to_string(N) + " out of range for " +
                                                  std::to_string(N) + " ranks"));
  REQUIRE_THROWS_WITH(comm.broadcast(f, -1), Contains("root -1 out of range"));
  REQUIRE_THROWS_WITH(comm.all_reduce(f, d),
                      Contains("input dtype float32 differs from output dtype float64"));
  REQUIRE_THROWS_WITH(comm.all_reduce(i32, ReduceOp::avg), Contains("avg is not defined for int32"));
  Tensor small = zeros({8 * N - 1});
  REQUIRE_THROWS_WITH(comm.all_gather(f, small), Contains("expected " + std::to_string(N) + " ranks x 8"));
  Tensor nine = zeros({9});
  REQUIRE_THROWS_WITH(comm.all_reduce(f, nine), Contains("input has 8 elements, output 9"));
  REQUIRE_THROWS_WITH(comm.reduce_scatter(f, nine), Contains("reduce_scatter: input has 8 elements"));
  REQUIRE_THROWS_WITH(comm.send(f, N), Contains("peer " + std::to_string(N) + " is not another rank"));
  REQUIRE_THROWS_WITH(comm.recv(f, comm.rank()), Contains("is not another rank"));
  REQUIRE_THROWS_WITH(comm.reduce(f, 0, ReduceOp::sum, {.algorithm = comm::Algorithm::ring}),
                      Contains("reduce has no ring algorithm"));
  // The communicator is still usable afterwards: nothing was half-sent.
  Tensor one = ones({5});
  comm.all_reduce(one);
  REQUIRE(global_sum(one.item(4) != N) == 0);
}

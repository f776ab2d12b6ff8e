// Bad input raises a ringdp::Error naming the bad value on every rank, before any message
// moves, so no rank is left waiting. Each case runs on all ranks with the same bad input.
#include <catch2/catch.hpp>

#include <vector>

#include "comm/transport/mpi/mpi_transport.h"
#include "tensor/ops.h"
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
  REQUIRE_THROWS_WITH(
      comm.all_reduce(f, ReduceOp::bxor),
      Contains("reduce op bxor is not defined for float32 tensors; it takes integers or bool"));
  Tensor whole = zeros({8 * N}, DType::float64);
  REQUIRE_THROWS_WITH(comm.reduce_scatter(whole, d, ReduceOp::band),
                      Contains("band is not defined for float64"));
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

TEST_CASE("an output that partly overlaps its input is refused; in place and disjoint work", "[errors]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  const int64_t n = 6;
  Tensor x = zeros({(N + 1) * n + 1});
  const auto overlap = Contains("the output overlaps the input without being it");
  Tensor head = x.flat_view(0, n), shifted = x.flat_view(1, n), tail_of_head = x.flat_view(n - 1, n);
  REQUIRE_THROWS_WITH(comm.all_reduce(head, shifted), overlap);
  REQUIRE_THROWS_WITH(comm.reduce(shifted, head, 0), overlap);
  REQUIRE_THROWS_WITH(comm.broadcast(head, tail_of_head, 0), overlap);
  // all_gather in place: the input is this rank's chunk of the output, nowhere else.
  Tensor whole_view = x.flat_view(0, N * n), off_chunk = x.flat_view(rank * n + 1, n);
  REQUIRE_THROWS_WITH(comm.all_gather(off_chunk, whole_view), overlap);
  REQUIRE_THROWS_WITH(comm.reduce_scatter(whole_view, off_chunk), overlap);
  // What stays allowed, with the values checked: one buffer passed as both (in place), a rank's
  // own chunk (ring and MPI's own), and two neighbouring views of one buffer.
  ops::fill_(head, 1.0);
  Tensor head_again = x.flat_view(0, n);
  comm.all_reduce(head, head_again);
  REQUIRE(global_sum(head.to_vector() != std::vector<double>(n, N)) == 0);
  for (comm::Algorithm algo : {comm::Algorithm::ring, comm::Algorithm::native}) {
    Tensor whole = full({N * n}, 1.0);
    Tensor mine = whole.flat_view(rank * n, n);
    comm.reduce_scatter(whole, mine, ReduceOp::sum, {.algorithm = algo});
    REQUIRE(global_sum(mine.to_vector() != std::vector<double>(n, N)) == 0);
  }
  Tensor pair = full({2 * n}, 2.0);
  Tensor first = pair.flat_view(0, n), second = pair.flat_view(n, n);
  comm.all_reduce(first, second);
  REQUIRE(global_sum(second.to_vector() != std::vector<double>(n, 2.0 * N)) == 0);
}

#if RINGDP_HAVE_MPI
TEST_CASE("a failing MPI call is an error naming the call, the rank and MPI's reason", "[errors]") {
  // RINGDP_MPI_CHECK tests the code in place and calls out only on failure (issue #20): that call must
  // still happen. A send to a rank that does not exist fails at once, on a communicator that
  // returns errors as ringdp's own do.
  auto& comm = world();
  MPI_Comm returning = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &returning);
  MPI_Comm_set_errhandler(returning, MPI_ERRORS_RETURN);
  int value = 0;
  const int nobody = comm.size() + 5;
  // MPI's own words for this failure, to find in ringdp's message.
  char reason[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(MPI_Send(&value, 1, MPI_INT, nobody, 0, returning), reason, &length);
  REQUIRE(length > 0);
  REQUIRE_THROWS_WITH(
      [&] { RINGDP_MPI_CHECK(MPI_Send(&value, 1, MPI_INT, nobody, 0, returning)); }(),
      Contains("MPI call `MPI_Send(&value, 1, MPI_INT, nobody, 0, returning)` failed on rank " +
               std::to_string(comm.rank())) &&
          Contains(std::string(reason, static_cast<size_t>(length))));
  MPI_Comm_free(&returning);
}
#endif

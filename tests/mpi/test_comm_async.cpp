// Asynchronous collectives: issue order is completion order, results are right, and wait()
// on finished work returns at once.
#include <catch2/catch.hpp>

#include "tests/support/mpi_test.h"

using namespace ringdp;
using namespace ringdp::testing;

TEST_CASE("two asynchronous all-reduces complete in order with correct results", "[async]") {
  auto& comm = world();
  const int N = comm.size();
  for (int round = 0; round < 10; ++round) {
    Tensor first = empty({100003}, DType::float32), second = empty({517}, DType::float64);
    fill_input(first, comm.rank(), ReduceOp::sum);
    fill_input(second, comm.rank(), ReduceOp::max);
    comm::Work a = comm.all_reduce(first, ReduceOp::sum, {.async = true});
    comm::Work b = comm.all_reduce(second, ReduceOp::max, {.async = true});
    b.wait();
    // The worker runs in issue order: once the second is done, the first must be too.
    const bool first_done_before_second = a.is_completed();
    a.wait();
    const int64_t wrong = count_wrong(first, N, ReduceOp::sum) + count_wrong(second, N, ReduceOp::max);
    REQUIRE(global_sum(wrong) == 0);
    REQUIRE(global_sum(first_done_before_second ? 0 : 1) == 0);
    a.wait();  // again: returns at once
    REQUIRE(a.is_completed());
  }
}

TEST_CASE("a blocking collective after asynchronous ones waits its turn", "[async]") {
  auto& comm = world();
  std::vector<Tensor> tensors;
  std::vector<comm::Work> works;
  for (int i = 0; i < 8; ++i) {
    tensors.push_back(full({4096}, comm.rank() + i, DType::int64));
    works.push_back(comm.all_reduce(tensors.back(), ReduceOp::sum, {.async = true}));
  }
  Tensor last = full({3}, 1.0, DType::int32);
  comm.all_reduce(last);
  for (auto& w : works) REQUIRE(w.is_completed());
  const int N = comm.size();
  int64_t wrong = last.item(0) != N;
  for (int i = 0; i < 8; ++i) wrong += tensors[i].item(4095) != N * (N - 1) / 2.0 + N * i;
  REQUIRE(global_sum(wrong) == 0);
}

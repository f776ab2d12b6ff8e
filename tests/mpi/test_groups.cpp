// Communicator::group (comm/communicator.h): communicators over some ranks of the world, as torch's
// new_group makes them. Groups of one, of all ranks in another order, of the even and the odd ranks
// running their collectives at the same time, a group of a group; ranks outside a group call
// nothing. Results are checked against values each rank computes on its own.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "comm/bootstrap/mpi_runtime.h"
#include "tests/support/mpi_test.h"

using namespace ringdp;
using namespace ringdp::testing;
using Catch::Contains;
using comm::Algorithm;

namespace {

// world ranks r with r % 2 == parity, in ascending order.
std::vector<int> ranks_with_parity(int size, int parity) {
  std::vector<int> ranks;
  for (int r = parity; r < size; r += 2) ranks.push_back(r);
  return ranks;
}

// The sum of input_value over the world ranks of `members`, at `index`: the group's all_reduce.
double group_sum(const std::vector<int>& members, int64_t index) {
  double sum = 0;
  for (const int r : members) sum += input_value(r, index, ReduceOp::sum);
  return sum;
}

// All-reduces world-rank-keyed inputs over `group` with `algorithm` and counts the wrong elements.
int64_t wrong_all_reduce(comm::Communicator& group, const std::vector<int>& members, int64_t count,
                         Algorithm algorithm) {
  Tensor t = empty({count}, DType::float64, test_device());
  fill_input(t, world().rank(), ReduceOp::sum);
  group.all_reduce(t, ReduceOp::sum, {.algorithm = algorithm});
  const std::vector<double> got = t.to_vector();
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) wrong += got[static_cast<size_t>(i)] != group_sum(members, i);
  return wrong;
}

}  // namespace

TEST_CASE("group: the even and the odd ranks all-reduce at the same time", "[groups]") {
  auto& comm = world();
  const std::vector<int> members = ranks_with_parity(comm.size(), comm.rank() % 2);
  auto group = comm.group(members);
  REQUIRE(group->size() == static_cast<int>(members.size()));
  REQUIRE(group->rank() == comm.rank() / 2);
  int64_t wrong = 0;
  for (const int64_t count : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1031}, int64_t{100003}})
    for (const Algorithm a : {Algorithm::ring, Algorithm::recursive_doubling, Algorithm::native})
      wrong += wrong_all_reduce(*group, members, count, a);
  REQUIRE(global_sum(wrong) == 0);
  // The world still works after, and between, its groups' collectives.
  Tensor one = full({1}, 1.0, DType::int64, test_device());
  comm.all_reduce(one);
  REQUIRE(one.to_vector()[0] == comm.size());
}

TEST_CASE("group: every rank in reverse order; broadcast and all_gather use the group's ranks", "[groups]") {
  auto& comm = world();
  const int N = comm.size();
  std::vector<int> reversed(static_cast<size_t>(N));
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  auto group = comm.group(reversed);
  REQUIRE(group->rank() == N - 1 - comm.rank());
  // Group rank 0 is world rank N-1: its value reaches everyone.
  Tensor b = full({5}, static_cast<double>(comm.rank()), DType::int32, test_device());
  group->broadcast(b, 0);
  const std::vector<double> got = b.to_vector();
  REQUIRE(std::all_of(got.begin(), got.end(), [N](double v) { return v == N - 1; }));
  // all_gather orders by group rank: world ranks N-1, ..., 0.
  Tensor mine = full({2}, static_cast<double>(comm.rank()), DType::float32, test_device());
  Tensor all = empty({2 * N}, DType::float32, test_device());
  group->all_gather(mine, all);
  const std::vector<double> gathered = all.to_vector();
  for (int g = 0; g < N; ++g) {
    CHECK(gathered[static_cast<size_t>(2 * g)] == N - 1 - g);
    CHECK(gathered[static_cast<size_t>(2 * g + 1)] == N - 1 - g);
  }
  group->barrier();
}

TEST_CASE("group: a group of one, and ranks outside a group call nothing", "[groups]") {
  auto& comm = world();
  const int me = comm.rank();
  auto alone = comm.group(std::vector<int>{me});
  REQUIRE(alone->size() == 1);
  REQUIRE(alone->rank() == 0);
  Tensor t = full({3}, 4.0, DType::float32, test_device());
  alone->all_reduce(t);
  alone->broadcast(t, 0);
  alone->barrier();
  REQUIRE(t.to_vector() == std::vector<double>{4, 4, 4});
  // Only ranks 0 and N-1 make this group; the others go straight on to the world's barrier.
  const int N = comm.size();
  if (N > 2 && (me == 0 || me == N - 1)) {
    auto ends = comm.group(std::vector<int>{0, N - 1});
    Tensor v = full({1}, static_cast<double>(me + 1), DType::int64, test_device());
    ends->all_reduce(v);
    REQUIRE(v.to_vector()[0] == N + 1);
  }
  comm.barrier();
}

TEST_CASE("group: a group of a group counts ranks in its parent", "[groups]") {
  auto& comm = world();
  const int N = comm.size();
  if (N < 3) return;  // needs a group of at least 2 whose sub-group leaves a rank out
  if (comm.rank() == 0) {  // the world's rank 0 sits out; ranks 1..N-1 form the group
    comm.barrier();
    return;
  }
  std::vector<int> tail(static_cast<size_t>(N - 1));
  std::iota(tail.begin(), tail.end(), 1);
  auto group = comm.group(tail);
  // In `group` rank g is world rank g + 1: its ranks 0 and 1 are world ranks 1 and 2.
  if (group->rank() < 2) {
    auto pair = group->group(std::vector<int>{1, 0});
    REQUIRE(pair->rank() == 1 - group->rank());
    Tensor v = full({1}, static_cast<double>(comm.rank()), DType::int32, test_device());
    pair->broadcast(v, 0);
    REQUIRE(v.to_vector()[0] == 2);
  }
  comm.barrier();
}

TEST_CASE("group: bad rank lists are refused with the bad value named", "[groups]") {
  auto& comm = world();
  const int N = comm.size(), me = comm.rank();
  REQUIRE_THROWS_WITH(comm.group(std::vector<int>{}), Contains("no ranks given"));
  REQUIRE_THROWS_WITH(
      comm.group(std::vector<int>{me, N}),
      Contains("rank " + std::to_string(N) + " out of range for a communicator of " + std::to_string(N)));
  REQUIRE_THROWS_WITH(comm.group(std::vector<int>{me, -1}), Contains("rank -1 out of range"));
  REQUIRE_THROWS_WITH(comm.group(std::vector<int>{me, me}),
                      Contains("rank " + std::to_string(me) + " is listed twice"));
  if (N > 1)
    REQUIRE_THROWS_WITH(comm.group(std::vector<int>{(me + 1) % N}),
                        Contains("this rank (" + std::to_string(me) + ") is not in the list"));
  // Members that disagree on the order are stopped on every member, not left to compute with
  // ranks that mean different processes.
  if (N > 1) {
    std::vector<int> all(static_cast<size_t>(N));
    std::iota(all.begin(), all.end(), 0);
    if (me == 0) std::reverse(all.begin(), all.end());
    REQUIRE_THROWS_WITH(comm.group(all), Contains("the members passed different rank lists"));
  }
  comm.barrier();
}

TEST_CASE("group: the world's asynchronous calls and a group's, each group in its own order", "[groups]") {
  // Under MPI_THREAD_MULTIPLE each communicator has its own queue (comm/execution/call_queue.h): a group's
  // blocking call issued while the world's are in flight may finish first, and both are right.
  // Where one queue serves them all (RINGDP_MPI_THREAD=serialized, registered apart in
  // tests/mpi/meson.build), the group's call runs after them, on every rank alike.
  auto& comm = world();
  const bool one_queue = !comm::mpi_allows_independent_threads();
  const std::vector<int> members = ranks_with_parity(comm.size(), comm.rank() % 2);
  auto group = comm.group(members);
  std::vector<Tensor> tensors;
  std::vector<comm::Work> pending;
  int64_t overtaken = 0;  // world calls still running when a group call issued after them returned
  for (int i = 0; i < 8; ++i) {
    tensors.push_back(full({200003}, static_cast<double>(i), DType::float64, test_device()));
    pending.push_back(comm.all_reduce(tensors.back(), ReduceOp::sum, {.async = true}));
    REQUIRE(wrong_all_reduce(*group, members, 257, Algorithm::ring) == 0);
    for (const auto& w : pending) overtaken += !w.is_completed();
  }
  if (one_queue) REQUIRE(overtaken == 0);
  for (auto& w : pending) w.wait();
  int64_t wrong = 0;
  for (int i = 0; i < 8; ++i)
    for (const double v : tensors[static_cast<size_t>(i)].to_vector()) wrong += v != i * comm.size();
  REQUIRE(global_sum(wrong) == 0);
}

TEST_CASE("group: a message nobody received in a destroyed group never reaches a later one", "[groups]") {
  // MPI reuses a freed communicator's context id: a message left unreceived in it was matched by
  // the next group's receive (torch's destroy_process_group and a new group: 111 arrived for 222).
  auto& comm = world();
  const int N = comm.size(), me = comm.rank();
  if (N < 2) return;
  std::vector<int> all(static_cast<size_t>(N));
  std::iota(all.begin(), all.end(), 0);
  for (int round = 0; round < 4; ++round) {
    // A group, and a second world communicator (torch's destroy and init of the default group).
    auto group = round % 2 ? comm.group(all) : comm::Communicator::init(comm.options());
    if (me == 1) group->send(full({4}, 111.0, DType::float32), 0, 3);  // never received
    group.reset();
    auto next = round % 2 ? comm.group(all) : comm::Communicator::init(comm.options());
    if (me == 1) next->send(full({4}, 222.0, DType::float32), 0, 3);
    if (me == 0) {
      Tensor got = full({4}, -1.0, DType::float32);
      next->recv(got, 1, 3);
      REQUIRE(got.to_vector() == std::vector<double>(4, 222.0));
    }
    next->barrier();
  }
}

TEST_CASE("group: made after the world's asynchronous calls, once they have run", "[groups]") {
  // Creating a group calls MPI (MPI_Comm_create_group on the world's communicator): as a call of the
  // world's, after those issued before it, never beside one on another thread.
  auto& comm = world();
  std::vector<Tensor> tensors;
  std::vector<comm::Work> pending;
  for (int i = 0; i < 8; ++i) {
    tensors.push_back(full({200003}, static_cast<double>(i), DType::float64, test_device()));
    pending.push_back(comm.all_reduce(tensors.back(), ReduceOp::sum, {.async = true}));
  }
  std::vector<int> all(static_cast<size_t>(comm.size()));
  std::iota(all.begin(), all.end(), 0);
  auto group = comm.group(all, std::chrono::milliseconds(90000));
  int64_t overtaken = 0;
  for (const auto& w : pending) overtaken += !w.is_completed();
  REQUIRE(overtaken == 0);
  // The group's own timeout, unless RINGDP_TIMEOUT is set (the suite sets it), which wins.
  const char* env = std::getenv("RINGDP_TIMEOUT");
  const auto want = env && *env ? std::chrono::milliseconds(static_cast<int64_t>(std::atof(env) * 1000))
                                : std::chrono::milliseconds(90000);
  REQUIRE(group->options().timeout == want);
  for (auto& w : pending) w.wait();
  REQUIRE(wrong_all_reduce(*group, all, 1031, Algorithm::automatic) == 0);
}

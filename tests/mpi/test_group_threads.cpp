// Four threads, each all-reducing on a group of its own (issue #47 item 7), as four Python
// threads on four new_group()s do under torch: the groups must progress independently, whatever
// order each rank starts its threads in. Rank r starts them in an order of its own (the even
// ranks 0, 1, 2, 3, the odd ones 3, 2, 1, 0, a pause apart), which deadlocks a process that runs
// one group's collective at a time (RINGDP_MPI_THREAD=serialized, one queue for all): there,
// tests/mpi/meson.build runs it to watch the watchdog name every waiting group. Results are
// checked against values each rank computes on its own.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "core/timeline.h"
#include "core/whole_file.h"
#include "tests/support/mpi_test.h"

using namespace ringdp;
using namespace ringdp::testing;

namespace {

constexpr int kGroups = 4;
constexpr int kCalls = 30;

// The sum over the world's ranks of input_value at `index`, shifted by `call`.
double expected(int size, int64_t index, int call) {
  double sum = 0;
  for (int r = 0; r < size; ++r) sum += input_value(r, index, ReduceOp::sum) + call;
  return sum;
}

// kCalls all-reduces on `group`, blocking and asynchronous in turn; returns the wrong elements.
int64_t run_calls(comm::Communicator& group, int world_rank, int world_size) {
  int64_t wrong = 0;
  for (int call = 0; call < kCalls; ++call) {
    const int64_t count = 1 + (call * 997) % 5003;  // small and not-so-small, uneven over ranks
    std::vector<double> values(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      values[static_cast<size_t>(i)] = input_value(world_rank, i, ReduceOp::sum) + call;
    Tensor t = from_vector(values, {count}, DType::float64);
    if (call % 2 == 0) {
      group.all_reduce(t, ReduceOp::sum);
    } else {
      group.all_reduce(t, ReduceOp::sum, {.async = true}).wait();
    }
    const std::vector<double> got = t.to_vector();
    for (int64_t i = 0; i < count; ++i) wrong += got[static_cast<size_t>(i)] != expected(world_size, i, call);
  }
  return wrong;
}

}  // namespace

TEST_CASE("group threads: four threads on four groups, started in another order on each rank", "[groups]") {
  auto& comm = world();
  std::vector<int> everyone(static_cast<size_t>(comm.size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  std::vector<std::shared_ptr<comm::Communicator>> groups;
  for (int g = 0; g < kGroups; ++g) groups.push_back(comm.group(everyone));
  std::atomic<int64_t> wrong{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int g = 0; g < kGroups; ++g) {
    const int place = comm.rank() % 2 == 0 ? g : kGroups - 1 - g;
    threads.emplace_back([&, g, place] {
      std::this_thread::sleep_for(std::chrono::milliseconds(150 * place));
      try {
        wrong += run_calls(*groups[static_cast<size_t>(g)], comm.rank(), comm.size());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d, thread of group %d: %s\n", comm.rank(), g, e.what());
        ++failed;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Each count through a global sum, so every rank passes or fails each check alike: a rank that
  // stopped alone at a failed check would leave its peers waiting in the next sum until the watchdog.
  REQUIRE(global_sum(failed.load()) == 0);
  REQUIRE(global_sum(wrong.load()) == 0);
}

TEST_CASE("group threads: a group's collectives carry its label in the timeline", "[groups]") {
  // Every communicator's worker records on the one comm row, so concurrent groups' events overlap
  // there; the label says whose each is.
  auto& comm = world();
  std::vector<int> everyone(static_cast<size_t>(comm.size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  auto group = comm.group(everyone);
  const std::string path = "/tmp/ringdp-group-threads." + std::to_string(::getpid()) + ".json";
  timeline::start(path, comm.rank());
  Tensor t = from_vector(std::vector<double>(7, 1.0), {7}, DType::float64);
  group->all_reduce(t, ReduceOp::sum);
  timeline::write();
  timeline::stop();
  const std::string trace = read_whole_file(path, "the timeline");
  std::remove(path.c_str());
  CHECK_THAT(
      trace,
      Catch::Matches(R"([\s\S]*all_reduce #0 [a-z_]+ on group #[0-9]+ of world ranks 0(, [0-9]+)*[\s\S]*)"));
}

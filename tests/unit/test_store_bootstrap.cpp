// comm/world/store_discovery.cpp's meeting through a store (torchrun, mp.spawn): arrivals counted
// per world size, a rank claimed twice in one generation refused at once, ranks given different
// world sizes naming each other's, a rank's own failure raised as it is, over a store as strict as
// torch's (tests/doubles/store/).
// A rank alone waits out a short timeout: no second process. UCX is reached only where it is told
// to fail (UCX_TLS=nosuch).
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "comm/comm_options.h"
#include "comm/world/departures.h"
#include "comm/world/discovery.h"
#include "config.h"
#include "core/error.h"
#include "tests/doubles/store/memory_store.h"

using namespace ringdp;
using namespace std::chrono_literals;

namespace {

// The error rank `rank` of `size` meets joining through `store` with a wait of `timeout`.
std::string join_error(std::shared_ptr<test::MemoryStore> store, int rank, int size,
                       std::chrono::milliseconds timeout) {
  comm::CommOptions options;
  options.timeout = timeout;
  try {
    comm::bootstrap_store_world(options, std::move(store), rank, size);
  } catch (const Error& e) {
    return e.what();
  }
  return "joined";
}

}  // namespace

#if RINGDP_HAVE_UCX
TEST_CASE("a second process as a rank its generation already has is refused at once", "[store]") {
  auto store = std::make_shared<test::MemoryStore>();
  auto first = std::async(std::launch::async, [&] { return join_error(store, 0, 2, 400ms); });
  for (int i = 0; i < 2000 && store->add("ringdp/2#1/claims/0", 0) == 0; ++i)
    std::this_thread::sleep_for(1ms);
  REQUIRE(store->add("ringdp/2#1/claims/0", 0) == 1);
  const auto began = std::chrono::steady_clock::now();
  const std::string second = join_error(store, 0, 2, 400ms);
  CHECK(std::chrono::steady_clock::now() - began < 200ms);
  CHECK_THAT(second,
             Catch::Contains("another process already joined the store bootstrap (ringdp/2#1) as rank 0: "
                             "two jobs share this store"));
  CHECK_THAT(first.get(),
             Catch::Contains("rank 0 of 2: rank 1 never joined the store bootstrap (ringdp/2#1)"));
  CHECK(store->add("ringdp/arrivals/2", 0) == 1);  // the refused one gave its arrival back
}

TEST_CASE("a rank outside the world is refused before it counts as an arrival", "[store]") {
  auto store = std::make_shared<test::MemoryStore>();
  CHECK_THAT(join_error(store, 2, 2, 50ms), Catch::Contains("rank 2 of 2 (expected 0 <= rank < world_size)"));
  CHECK(store->add("ringdp/arrivals/2", 0) == 0);
}

TEST_CASE("arrivals are counted per world size", "[store]") {
  auto store = std::make_shared<test::MemoryStore>();
  // Rank 0 of a world of 2 came alone; an init with 3 ranks counts afresh (ringdp/3#1, not a
  // second generation of 2); a second rank 0 of 2 is still in the first generation, and refused.
  CHECK_THAT(join_error(store, 0, 2, 50ms),
             Catch::Contains("rank 1 never joined the store bootstrap (ringdp/2#1)"));
  CHECK_THAT(join_error(store, 0, 3, 50ms),
             Catch::Contains("rank 1 never joined the store bootstrap (ringdp/3#1)"));
  CHECK(store->add("ringdp/arrivals/2", 0) == 1);
  CHECK(store->add("ringdp/arrivals/3", 0) == 1);
  CHECK_THAT(join_error(store, 0, 2, 50ms),
             Catch::Contains("another process already joined the store bootstrap (ringdp/2#1) as rank 0"));
}

TEST_CASE("ranks given different world sizes each name the other's", "[store]") {
  auto store = std::make_shared<test::MemoryStore>();
  auto three = std::async(std::launch::async, [&] { return join_error(store, 0, 3, 300ms); });
  const std::string two = join_error(store, 1, 2, 300ms);
  CHECK_THAT(two, Catch::Contains(
                      "rank 0 last joined this store with world_size 3 but rank 1 with 2: every rank must be "
                      "given the same world_size"));
  CHECK_THAT(three.get(),
             Catch::Contains("rank 1 last joined this store with world_size 2 but rank 0 with 3"));
}

TEST_CASE("a rank's own failure is raised as it is, even once the store is gone", "[store]") {
  // UCX cannot start on either rank (UCX_TLS names no transport), and the store's server ends once
  // rank 1 read rank 0's introduction, as TCPStore's does with a rank 0 that failed and exited:
  // rank 1 raises UCX's reason, not the store's end.
  const char* was = std::getenv("UCX_TLS");
  const std::string saved = was ? was : "";
  setenv("UCX_TLS", "nosuch", 1);
  auto store = std::make_shared<test::MemoryStore>();
  store->end_after_reading("ringdp/2#1/0/0");
  auto zero = std::async(std::launch::async, [&] { return join_error(store, 0, 2, 2000ms); });
  const std::string one = join_error(store, 1, 2, 2000ms);
  zero.get();
  if (was)
    setenv("UCX_TLS", saved.c_str(), 1);
  else
    unsetenv("UCX_TLS");
  CHECK_THAT(one, Catch::Contains("UCX: ucp_init failed"));
}
#else
TEST_CASE("without UCX a job started without MPI is refused before it counts as an arrival", "[store]") {
  auto store = std::make_shared<test::MemoryStore>();
  CHECK_THAT(join_error(store, 0, 2, 50ms), Catch::Contains("ringdp was built without UCX"));
  CHECK_THAT(join_error(store, 0, 2, 50ms), Catch::Contains("launch with mpirun, mpiexec or srun"));
  CHECK(store->add("ringdp/arrivals/2", 0) == 0);
}
#endif

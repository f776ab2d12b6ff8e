// comm/algorithms/algorithm_choice.h without MPI: what `auto` picks for each size, world and route, what may
// be asked for by name, and that the words of explain() follow the choice.
#include <catch2/catch.hpp>
#include <limits>

#include "comm/algorithms/algorithm_choice.h"
#include "core/error.h"

using namespace ringdp;
using namespace ringdp::comm;

namespace {
constexpr size_t KiB = 1024, MiB = 1024 * 1024;

CommOptions defaults() {
  CommOptions o;
  o.segment_bytes = MiB;
  return o;  // rd 32 KiB, Rabenseifner 2 MiB, shared memory at every size, chain from 8 MiB
}

Algorithm pick(CollectiveKind kind, size_t bytes, Topology world, Route route = Route::host,
               const CommOptions& o = defaults()) {
  return choose_algorithm(kind, bytes, Algorithm::automatic, route, world, o).algorithm;
}
}  // namespace

TEST_CASE("auto all_reduce follows the measured thresholds", "[choice]") {
  const Topology one_host{.size = 4, .hosts = 1, .shared_slots = true};
  const Topology two_ranks_two_hosts{.size = 2, .hosts = 2};
  const Topology four_ranks_four_hosts{.size = 4, .hosts = 4};
  const Topology four_ranks_two_hosts{.size = 4, .hosts = 2};
  struct Row {
    Topology world;
    size_t bytes;
    Route route;
    Algorithm expected;
  };
  const Row rows[] = {
      {one_host, 8, Route::host, Algorithm::shared_memory},
      {one_host, 64 * MiB, Route::host, Algorithm::shared_memory},
      {two_ranks_two_hosts, 32 * KiB, Route::host, Algorithm::recursive_doubling},
      {two_ranks_two_hosts, 32 * KiB + 1, Route::host, Algorithm::ring},  // < 4 ranks: no Rabenseifner
      {four_ranks_four_hosts, 32 * KiB + 1, Route::host, Algorithm::rabenseifner},
      {four_ranks_four_hosts, 2 * MiB, Route::host, Algorithm::rabenseifner},
      {four_ranks_four_hosts, 2 * MiB + 1, Route::host, Algorithm::ring},
      {four_ranks_two_hosts, 32 * KiB, Route::host, Algorithm::recursive_doubling},
      {four_ranks_two_hosts, 32 * KiB + 1, Route::host, Algorithm::hierarchical},
      // CUDA tensors keep recursive doubling and the ring: the others were measured on host memory.
      {one_host, 8, Route::nccl, Algorithm::recursive_doubling},
      {one_host, 64 * MiB, Route::mpi_cuda, Algorithm::ring},
      {four_ranks_four_hosts, 1 * MiB, Route::nccl, Algorithm::ring},
      {four_ranks_two_hosts, 1 * MiB, Route::nccl, Algorithm::ring},
      {Topology{}, 8, Route::host, Algorithm::recursive_doubling},  // a world of one shares nothing
  };
  for (const Row& row : rows) {
    INFO(row.world.size << " ranks on " << row.world.hosts << " hosts, " << row.bytes << " B, route "
                        << static_cast<int>(row.route));
    CHECK(pick(CollectiveKind::all_reduce, row.bytes, row.world, row.route) == row.expected);
  }
}

TEST_CASE("the thresholds come from the options", "[choice]") {
  CommOptions o = defaults();
  o.shared_memory_max_bytes = 0;  // RINGDP_SHM_MAX_BYTES=0: the documented way back
  const Topology one_host{.size = 4, .hosts = 1, .shared_slots = true};
  CHECK(pick(CollectiveKind::all_reduce, 8, one_host, Route::host, o) == Algorithm::recursive_doubling);
  CHECK(pick(CollectiveKind::all_reduce, MiB, one_host, Route::host, o) == Algorithm::rabenseifner);
  o.rabenseifner_max_bytes = 0;
  CHECK(pick(CollectiveKind::all_reduce, MiB, one_host, Route::host, o) == Algorithm::ring);
  o.chain_broadcast_min_bytes = 100;
  CHECK(pick(CollectiveKind::broadcast, 99, one_host, Route::host, o) == Algorithm::tree);
  CHECK(pick(CollectiveKind::broadcast, 100, one_host, Route::host, o) == Algorithm::chain);
}

TEST_CASE("tensors in shared allocations take the direct path at any size", "[choice]") {
  CommOptions o = defaults();
  o.shared_memory_max_bytes = 0;  // even where the slotted path is switched off
  const Topology one_host{.size = 4, .hosts = 1, .shared_slots = true};
  const auto direct = [&](size_t bytes, Route route, Topology world) {
    return choose_algorithm(CollectiveKind::all_reduce, bytes, Algorithm::automatic, route, world, o, true);
  };
  for (size_t bytes : {size_t{0}, size_t{8}, 256 * MiB}) {
    const Choice choice = direct(bytes, Route::host, one_host);
    CHECK(choice.algorithm == Algorithm::shared_memory);
    CHECK(choice.reason == Reason::shared_buffers);
    CHECK_THAT(explain(choice, bytes, one_host, o), Catch::Contains("in shared allocations"));
  }
  // Without slots (a world without shared windows) the flag changes nothing.
  CHECK(direct(MiB, Route::host, Topology{.size = 4, .hosts = 4}).algorithm == Algorithm::rabenseifner);
}

TEST_CASE("the other collectives have one algorithm of ringdp's own", "[choice]") {
  const Topology world{.size = 3, .hosts = 3};
  CHECK(pick(CollectiveKind::reduce, 8, world) == Algorithm::tree);
  CHECK(pick(CollectiveKind::all_gather, 8, world) == Algorithm::ring);
  CHECK(pick(CollectiveKind::reduce_scatter, 8, world) == Algorithm::ring);
  CHECK(pick(CollectiveKind::barrier, 0, world) == Algorithm::dissemination);
  CHECK(pick(CollectiveKind::broadcast, 8 * MiB - 1, world) == Algorithm::tree);
  CHECK(pick(CollectiveKind::broadcast, 8 * MiB, world) == Algorithm::chain);
  CHECK(pick(CollectiveKind::gather, 8, world) == Algorithm::tree);
  CHECK(pick(CollectiveKind::scatter, 8 * MiB, world) == Algorithm::tree);
  CHECK(pick(CollectiveKind::all_to_all, 8, world) == Algorithm::pairwise);
  CHECK(explain(choose_algorithm(CollectiveKind::all_to_all, 8, Algorithm::automatic, Route::host, world,
                                 defaults()),
                8, world, defaults()) ==
        "the only algorithm of ringdp's own: pairwise exchange (N-1 steps, one peer each): pairwise");
}

TEST_CASE("what may be asked for by name, and the errors for the rest", "[choice]") {
  const Topology one_host{.size = 2, .hosts = 1, .shared_slots = true};
  const Topology two_hosts{.size = 2, .hosts = 2};
  CHECK(available(CollectiveKind::all_reduce, Route::host, one_host).contains(Algorithm::shared_memory));
  CHECK_FALSE(
      available(CollectiveKind::all_reduce, Route::host, two_hosts).contains(Algorithm::shared_memory));
  CHECK_FALSE(
      available(CollectiveKind::all_reduce, Route::nccl, one_host).contains(Algorithm::shared_memory));
  CHECK_FALSE(available(CollectiveKind::all_reduce, Route::nccl, one_host).contains(Algorithm::hierarchical));
  CHECK(available(CollectiveKind::all_reduce, Route::nccl, one_host).contains(Algorithm::rabenseifner));
  CHECK(available(CollectiveKind::reduce, Route::host, one_host).names() == "tree, native");
  CHECK(available(CollectiveKind::gather, Route::nccl, one_host).names() == "tree, native");
  CHECK(available(CollectiveKind::scatter, Route::host, two_hosts).names() == "tree, native");
  CHECK(available(CollectiveKind::all_to_all, Route::mpi_cuda, one_host).names() == "pairwise, native");
  CHECK(available(CollectiveKind::broadcast, Route::host, one_host).names() == "tree, chain, native");
  CHECK(available(CollectiveKind::barrier, Route::nccl, one_host).names() == "dissemination, native");
  for (CollectiveKind kind :
       {CollectiveKind::all_reduce, CollectiveKind::reduce, CollectiveKind::broadcast,
        CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::barrier,
        CollectiveKind::gather, CollectiveKind::scatter, CollectiveKind::all_to_all}) {
    CHECK(choose_algorithm(kind, 8, Algorithm::native, Route::host, two_hosts, defaults()).algorithm ==
          Algorithm::native);
    CHECK(available(kind, Route::host, two_hosts).contains(Algorithm::native));
  }
  auto ask = [&](CollectiveKind kind, Algorithm a, Route route, const Topology& world) {
    return choose_algorithm(kind, 8, a, route, world, defaults());
  };
  CHECK_THROWS_WITH(ask(CollectiveKind::reduce, Algorithm::ring, Route::host, one_host),
                    Catch::Contains("reduce has no ring algorithm; available: tree, native, auto"));
  CHECK_THROWS_WITH(ask(CollectiveKind::all_to_all, Algorithm::tree, Route::host, one_host),
                    Catch::Contains("all_to_all has no tree algorithm; available: pairwise, native, auto"));
  // The names three algorithms went by before they had their own are refused, naming the new one.
  CHECK_THROWS_WITH(
      ask(CollectiveKind::all_to_all, Algorithm::ring, Route::host, one_host),
      Catch::Contains("all_to_all has no ring algorithm: the pairwise exchange, which this name "
                      "used to select, is called pairwise; available: pairwise, native, auto"));
  CHECK_THROWS_WITH(
      ask(CollectiveKind::broadcast, Algorithm::ring, Route::host, one_host),
      Catch::Contains("broadcast has no ring algorithm: the pipelined chain, which this name used "
                      "to select, is called chain"));
  CHECK_THROWS_WITH(ask(CollectiveKind::barrier, Algorithm::recursive_doubling, Route::host, one_host),
                    Catch::Contains("barrier has no recursive_doubling algorithm: the dissemination barrier, "
                                    "which this name used to select, is called dissemination"));
  CHECK_THROWS_WITH(ask(CollectiveKind::gather, Algorithm::ring, Route::host, one_host),
                    Catch::Contains("gather has no ring algorithm; available: tree, native, auto"));
  CHECK_THROWS_WITH(
      ask(CollectiveKind::all_reduce, Algorithm::shared_memory, Route::host, two_hosts),
      Catch::Contains("needs every rank on one host") && Catch::Contains("2 ranks run on 2 hosts"));
  CHECK_THROWS_WITH(ask(CollectiveKind::all_reduce, Algorithm::hierarchical, Route::nccl, one_host),
                    Catch::Contains("the hierarchical algorithm runs on host tensors"));
  CHECK(ask(CollectiveKind::all_reduce, Algorithm::shared_memory, Route::host, Topology{}).algorithm ==
        Algorithm::shared_memory);  // a world of one may ask: it reduces nothing
}

TEST_CASE("explain() says why, from the choice itself", "[choice]") {
  const CommOptions o = defaults();
  auto words = [&](CollectiveKind kind, size_t bytes, const Topology& world,
                   Algorithm requested = Algorithm::automatic) {
    return explain(choose_algorithm(kind, bytes, requested, Route::host, world, o), bytes, world, o);
  };
  const Topology two{.size = 2, .hosts = 2}, four{.size = 4, .hosts = 4};
  CHECK(words(CollectiveKind::all_reduce, 44, two) ==
        "44 B <= 32 KiB (RINGDP_RD_MAX_BYTES; latency-bound, log2 N steps): recursive_doubling");
  CHECK(words(CollectiveKind::all_reduce, MiB, four) ==
        "32 KiB < 1 MiB <= 2 MiB on 4 >= 4 ranks (RINGDP_RABENSEIFNER_MAX_BYTES): rabenseifner");
  CHECK(words(CollectiveKind::all_reduce, 3 * MiB, two) ==
        "3 MiB > 32 KiB on 2 < 4 ranks (bandwidth-bound, 2(N-1) steps of 1/N each): ring");
  CHECK(words(CollectiveKind::all_reduce, 3 * MiB, four) ==
        "3 MiB > 32 KiB and > 2 MiB (RINGDP_RABENSEIFNER_MAX_BYTES) (bandwidth-bound, 2(N-1) steps of 1/N "
        "each): ring");
  CHECK(words(CollectiveKind::all_reduce, 64 * KiB, Topology{.size = 4, .hosts = 2}) ==
        "64 KiB > 32 KiB on 2 hosts sharing ranks: hierarchical");
  const Topology shared{.size = 2, .hosts = 1, .shared_slots = true};
  CHECK(
      words(CollectiveKind::all_reduce, 44, shared) ==
      "44 B with every rank on one host (RINGDP_SHM_MAX_BYTES; each rank reads the others' parts from shared "
      "memory): shared_memory");
  CHECK_THAT(words(CollectiveKind::all_reduce, 256 * KiB + 3620, shared),
             Catch::Contains("but reads the last, 3620 B, whole"));
  CHECK(words(CollectiveKind::broadcast, 40, two) == "40 B < 8 MiB (RINGDP_CHAIN_MIN_BYTES): binomial tree");
  CHECK(words(CollectiveKind::reduce, 40, two) == "the only algorithm of ringdp's own: tree");
  CHECK(words(CollectiveKind::reduce, 40, two, Algorithm::native) == "asked for: native");
}

// SharedSlots (comm/transport/shm/shared_slots.h) between real processes: forked children over an anonymous
// shared mapping stand in for MPI's shared window, which is the same thing underneath. Every
// child checks every peer's part of every round: its envelope, its length and its values.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sched.h>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "comm/transport/shm/shared_slots.h"

using ringdp::comm::SharedSlots;

namespace {
constexpr size_t kSlotBytes = 1024;  // room for elements()' 200 values
uint32_t value(int rank, int round, int i) { return static_cast<uint32_t>(rank * 1000003 + round * 101 + i); }
int elements(int rank, int round) { return 1 + (round * 7 + rank * 3) % 200; }

// Rank r's chunk of an n-element part in a scattered round: [chunk(n, N, r), chunk(n, N, r + 1)).
int chunk(int n, int N, int r) { return n * r / N; }
uint32_t reduced_value(int rank, int round, int i) { return ~value(rank, round, i); }

// One rank's run; returns the number of wrong things it saw (the child's exit status). Scattered
// rounds as comm/algorithms/all_reduce_shared.cpp runs them: rank r reads only chunk r of every part, writes
// its "reduced" values over chunk r of its own part and publishes them; every rank then reads each
// peer's reduced chunk. A peer that overwrote a chunk too early, or a slot reused while a peer
// still reads it, shows as a wrong value.
int run_rank(int rank, std::vector<void*> regions, int rounds, bool scattered) {
  SharedSlots slots(rank, std::move(regions), kSlotBytes, false, nullptr);
  const int N = slots.size();
  int wrong = 0;
  // Publishes every round the ring has room for, as comm/algorithms/all_reduce_shared.cpp does
  // while it waits: a fast rank fills its ring while a slow peer still reads the oldest slot.
  const auto placement = scattered ? SharedSlots::Placement::scattered : SharedSlots::Placement::whole;
  const auto publish_ahead = [&] {
    while (static_cast<int>(slots.begun()) < rounds) {
      for (int r = 0; r < N; ++r)
        if (!slots.free_for_next(r, placement)) return;
      auto* mine = static_cast<uint32_t*>(slots.begin_round(placement));
      const int k = static_cast<int>(slots.begun()), n = elements(rank, k);
      for (int i = 0; i < n; ++i) mine[i] = value(rank, k, i);
      slots.publish(slots.begun(), k, static_cast<size_t>(n) * sizeof(uint32_t));
    }
  };
  for (int k = 1; k <= rounds; ++k) {
    for (publish_ahead(); static_cast<int>(slots.begun()) < k; publish_ahead()) sched_yield();
    for (int r = 0; r < N; ++r) {
      while (!slots.published(r, k)) sched_yield();
      if (k % 13 == rank) sched_yield();  // a slow reader now and then: a fast peer runs ahead
      wrong += slots.tag(r, k, placement) != k;
      wrong += slots.bytes(r, k, placement) != static_cast<size_t>(elements(r, k)) * sizeof(uint32_t);
      const auto* part = static_cast<const uint32_t*>(slots.part(r, k, placement));
      const int n_r = elements(r, k);
      const int from = scattered ? chunk(n_r, N, rank) : 0, to = scattered ? chunk(n_r, N, rank + 1) : n_r;
      for (int i = from; i < to; ++i) wrong += part[i] != value(r, k, i);
    }
    if (scattered) {
      auto* mine = static_cast<uint32_t*>(slots.mine(k, placement));
      const int n = elements(rank, k);
      for (int i = chunk(n, N, rank); i < chunk(n, N, rank + 1); ++i) mine[i] = reduced_value(rank, k, i);
      slots.publish_reduced(k);
      for (int r = 0; r < N; ++r) {
        if (r == rank) continue;
        while (!slots.reduced(r, k)) sched_yield();
        if (k % 11 == rank) sched_yield();
        const auto* part = static_cast<const uint32_t*>(slots.part(r, k, placement));
        const int n_r = elements(r, k);
        for (int i = chunk(n_r, N, r); i < chunk(n_r, N, r + 1); ++i)
          wrong += part[i] != reduced_value(r, k, i);
      }
    }
    slots.finish(k);
  }
  return wrong;
}
}  // namespace

TEST_CASE("shared slots: each rank reads every peer's part of every round, never one from another round",
          "[shared_slots]") {
  const int N = GENERATE(1, 2, 3, 4);
  const bool scattered = GENERATE(false, true);
  constexpr int kRounds = 4000;
  const size_t region = SharedSlots::region_bytes(kSlotBytes, N);
  // MAP_ANONYMOUS memory starts zeroed: every header reads round 0 before its rank starts.
  void* memory = mmap(nullptr, region * N, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(memory != MAP_FAILED);
  std::vector<void*> regions;
  for (int r = 0; r < N; ++r)
    regions.push_back(static_cast<char*>(memory) + r * region + 8);  // MPI's 8-byte alignment
  std::vector<pid_t> children;
  for (int r = 0; r < N; ++r) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(std::min(run_rank(r, regions, kRounds, scattered), 100));
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    INFO("N = " << N << (scattered ? ", scattered" : "") << ": a child saw " << WEXITSTATUS(status)
                << " wrong values (or died)");
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
  munmap(memory, region * N);
}

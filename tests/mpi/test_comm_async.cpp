// Asynchronous collectives: issue order is completion order, results are right, and wait()
// on finished work returns at once.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

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

TEST_CASE("waiting on an asynchronous receive lets queued collectives run", "[async][p2p]") {
  // Rank 0 queues a receive and an all_reduce, then waits on the receive; rank 1 joins the
  // all_reduce first and sends after it. Waiting must not hold what the queued all_reduce needs,
  // or rank 0 waits for a message rank 1 sends only after an all_reduce rank 0 cannot start.
  // Other ranks only join the all_reduces. Many rounds, so every interleaving gets its chance.
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  if (N < 2) return;
  int64_t wrong = 0;
  for (int round = 0; round < 1000; ++round) {
    Tensor sum = full({4}, 1.0);
    if (rank == 0) {
      Tensor got = zeros({2});
      comm::Work received = comm.recv(got, 1, 7, {.async = true});
      comm::Work reduced = comm.all_reduce(sum, ReduceOp::sum, {.async = true});
      received.wait();
      reduced.wait();
      wrong += got.to_vector() != std::vector<double>(2, round);
    } else {
      comm.all_reduce(sum);
      if (rank == 1) comm.send(full({2}, round), 0, 7);
    }
    wrong += sum.to_vector() != std::vector<double>(4, N);
  }
  REQUIRE(global_sum(wrong) == 0);
}

TEST_CASE("wait() and is_completed() racing on an asynchronous receive finish it once", "[async][p2p]") {
  // Finishing a receive copies into the tensor: finished twice, from two threads, that is a data
  // race ThreadSanitizer reports (the tsan suite runs this), and a double completion of the request.
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  if (N < 2 || rank > 1) return;
  int64_t wrong = 0;
  for (int round = 0; round < 1000; ++round) {
    if (rank == 1) {
      Tensor got = zeros({3});
      comm::Work received = comm.recv(got, 0, 9, {.async = true});
      std::thread poller([&] {
        while (!received.is_completed()) std::this_thread::yield();
      });
      received.wait();
      poller.join();
      wrong += got.to_vector() != std::vector<double>(3, round);
    } else {
      comm.send(full({3}, round), 1, 9);
    }
  }
  REQUIRE(wrong == 0);
}

TEST_CASE("on_done runs once the work is done: on the thread that ran it, or at once when done already",
          "[async][work]") {
  // The torch backend's completion threads sleep until a call's hook wakes them: a hook that ran
  // before the end, or never, or twice, would complete a call early, never, or twice.
  using namespace std::chrono_literals;
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  Tensor t = full({1000}, 1.0);
  // Rank 0 is late, so the others set their hook while the all-reduce is still waiting for it.
  comm.barrier();
  if (rank == 0 && N > 1) std::this_thread::sleep_for(200ms);
  comm::Work work = comm.all_reduce(t, ReduceOp::sum, {.async = true});
  std::atomic<int> runs{0};
  std::atomic<bool> done_when_run{false};
  std::thread::id ran_on;
  work.on_done([&] {
    done_when_run = work.is_completed();
    ran_on = std::this_thread::get_id();
    ++runs;
  });
  work.wait();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (runs == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(10ms);  // a second run, were there one, would come now
  REQUIRE(runs == 1);
  REQUIRE(done_when_run);
  if (rank != 0) REQUIRE(ran_on != std::this_thread::get_id());  // the worker's
  REQUIRE(t.item(999) == N);

  std::thread::id here;
  work.on_done([&] { here = std::this_thread::get_id(); });  // done already: at once
  REQUIRE(here == std::this_thread::get_id());
  comm::Work::returned().on_done([&] { here = {}; });  // a blocking call's work: at once too
  REQUIRE(here == std::thread::id{});

  if (N < 2 || rank > 1) return;
  // A two-part receive completes only when waited for: no hook would ever run.
  if (rank == 1) {
    Tensor got = zeros({2});
    comm::Work received = comm.recv(got, 0, 11, {.async = true});
    REQUIRE(received.needs_wait());
    REQUIRE_THROWS_WITH(received.on_done([] {}), Catch::Contains("completes only when waited for"));
    received.wait();
  } else {
    comm.send(full({2}, 1.0), 1, 11);
  }
}

TEST_CASE("work that was complete when made: no wait, its time kept, and a second part over it runs once",
          "[async][work]") {
  const auto before = std::chrono::steady_clock::now();
  const comm::Work done = comm::Work::completed();
  REQUIRE(done.is_completed());
  done.wait();
  done.mark_done();  // a no-op: it cannot be completed twice
  REQUIRE(done.completed_at() >= before);
  REQUIRE(done.completed_at() <= std::chrono::steady_clock::now());
  int finished = 0;
  const comm::Work two_part = comm::Work::then(
      done, [&] { ++finished; }, [] { return true; });
  REQUIRE(two_part.is_completed());  // polls: the first part is done, so the second runs now
  two_part.wait();
  REQUIRE(finished == 1);
}

TEST_CASE("a blocking call's Work is complete and keeps no completion time; an asynchronous one keeps it",
          "[async][work]") {
  auto& comm = world();
  Tensor t = full({16}, comm.rank() + 1.0);
  const comm::Work blocking = comm.all_reduce(t);
  REQUIRE(blocking.is_completed());
  blocking.wait();
  // Issue #20: a blocking call reads no clock for its Work; asking for the time is an error
  // that says so, not a made-up time.
  REQUIRE_THROWS_WITH(blocking.completed_at(),
                      Catch::Contains("blocking call's Work") && Catch::Contains("keeps no completion time"));
  const auto before = std::chrono::steady_clock::now();
  const comm::Work async = comm.all_reduce(t, ReduceOp::sum, {.async = true});
  async.wait();
  REQUIRE(async.completed_at() >= before);
  REQUIRE(async.completed_at() <= std::chrono::steady_clock::now());
}

TEST_CASE("a queued collective holds its own tensor handles: the caller's may be gone before it runs",
          "[async]") {
  // A blocking call hands the body the caller's tensors by reference (issue #20); a queued one
  // must copy the handles, or it would read the caller's stack after they went out of scope.
  // ASan (scripts/test --sanitize) reports the use after scope; without it, the reused memory
  // makes the values wrong.
  auto& comm = world();
  const int N = comm.size();
  std::vector<Tensor> outputs;
  std::vector<comm::Work> works;
  Tensor busy = full({1 << 20}, 1.0);
  works.push_back(comm.all_reduce(busy, ReduceOp::sum, {.async = true}));  // keeps the worker busy
  for (int i = 0; i < 8; ++i) {
    outputs.push_back(empty({1024}, DType::float32));
    Tensor input = empty({1024}, DType::float32);  // the only handle, dropped at the loop's end
    fill_input(input, comm.rank(), ReduceOp::sum, i * 1024);  // each call's values differ
    works.push_back(comm.all_reduce(input, outputs.back(), ReduceOp::sum, {.async = true}));
  }
  std::vector<Tensor> reuse;  // take the freed memory back and scribble on it
  for (int i = 0; i < 8; ++i) reuse.push_back(full({1024}, -7.0));
  for (const comm::Work& w : works) w.wait();
  int64_t wrong = 0;
  for (int i = 0; i < 8; ++i) wrong += count_wrong(outputs[i], N, ReduceOp::sum, i * 1024);
  REQUIRE(global_sum(wrong) == 0);
}

TEST_CASE("asynchronous block collectives own their counts: the caller's may change before wait()",
          "[async][blocks]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  for (comm::Algorithm algo : {comm::Algorithm::automatic, comm::Algorithm::native}) {
    // Rank i sends i + j + 1 elements to rank j, valued 1000·i + j; all_gather takes i + 1 from rank i.
    std::vector<int64_t> send(N), recv(N), counts(N);
    for (int j = 0; j < N; ++j) send[j] = rank + j + 1, recv[j] = j + rank + 1, counts[j] = j + 1;
    int64_t sent = 0, received = 0, total = 0;
    for (int j = 0; j < N; ++j) sent += send[j], received += recv[j], total += counts[j];
    Tensor input = empty({sent}, DType::int32), output = full({received}, -1.0, DType::int32);
    for (int j = 0, at = 0; j < N; ++j)
      for (int64_t e = 0; e < send[j]; ++e) input.data<int32_t>()[at++] = 1000 * rank + j;
    Tensor mine = full({rank + 1}, rank, DType::int64), gathered = full({total}, -1.0, DType::int64);
    Tensor block = full({3}, rank, DType::float64), at_root = full({3 * N}, -1.0, DType::float64);
    Tensor whole = arange(3 * N, DType::float64), part = full({3}, -1.0, DType::float64);
    comm::Work works[] = {comm.all_to_all(input, send, output, recv, {.algorithm = algo, .async = true}),
                          comm.all_gather(mine, gathered, counts, {.algorithm = algo, .async = true}),
                          comm.gather(block, at_root, N - 1, {.algorithm = algo, .async = true}),
                          comm.scatter(whole, part, N - 1, {.algorithm = algo, .async = true})};
    std::fill(send.begin(), send.end(), -5);  // the calls hold copies
    std::fill(recv.begin(), recv.end(), 99);
    counts.assign(N, 0);
    for (auto& w : works) w.wait();
    int64_t wrong = 0;
    for (int i = 0, at = 0; i < N; ++i)
      for (int64_t e = 0; e < i + rank + 1; ++e) wrong += output.data<int32_t>()[at++] != 1000 * i + rank;
    for (int r = 0, at = 0; r < N; ++r)
      for (int e = 0; e <= r; ++e) wrong += gathered.data<int64_t>()[at++] != r;
    if (rank == N - 1)
      for (int j = 0; j < 3 * N; ++j) wrong += at_root.data<double>()[j] != j / 3;
    for (int e = 0; e < 3; ++e) wrong += part.data<double>()[e] != 3 * rank + e;
    INFO("algorithm " << comm::algorithm_name(algo));
    REQUIRE(global_sum(wrong) == 0);
  }
}

// The step observer (Communicator::set_step_observer), which ringdp-train --explain reads: every
// step in order, then "done"; the same round carries the same step number on every rank; and
// the buffer it points at holds the partial result of each step.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "tests/support/mpi_test.h"

using namespace ringdp;
using namespace ringdp::testing;

namespace {
struct Seen {
  int step, steps;
  std::string phase;
  double value;  // element 0 of the buffer as the step began
};

std::vector<Seen> observe_all_reduce(comm::Communicator& comm, comm::Algorithm algorithm, Tensor& buf) {
  std::vector<Seen> seen;
  const float* first = buf.data<float>();
  comm.set_step_observer([&](const comm::Position& where) {
    if (where.kind == comm::CollectiveKind::all_reduce)
      seen.push_back({where.step, where.steps, comm::phase_name(where.phase), static_cast<double>(*first)});
  });
  comm.all_reduce(buf, ReduceOp::sum, {.algorithm = algorithm});
  comm.set_step_observer({});
  return seen;
}

std::vector<int64_t> gather(comm::Communicator& comm, int64_t mine) {
  Tensor out = zeros({comm.size()}, DType::int64);
  comm.all_gather(full({1}, static_cast<double>(mine), DType::int64), out);
  std::vector<int64_t> all;
  for (double v : out.to_vector()) all.push_back(static_cast<int64_t>(v));
  return all;
}
}  // namespace

TEST_CASE("the observer sees every step in order, then done with the sum", "[steps]") {
  auto& comm = world();
  const int N = comm.size();
  for (comm::Algorithm algorithm :
       {comm::Algorithm::ring, comm::Algorithm::recursive_doubling, comm::Algorithm::rabenseifner}) {
    CAPTURE(comm::algorithm_name(algorithm));
    Tensor buf = full({11}, 1.0, DType::float32);
    buf.data<float>()[0] = static_cast<float>(comm.rank() + 1);
    const std::vector<Seen> seen = observe_all_reduce(comm, algorithm, buf);
    REQUIRE(!seen.empty());
    const Seen& done = seen.back();
    REQUIRE(done.phase == "done");
    REQUIRE(done.step == done.steps + 1);
    REQUIRE(done.value == N * (N + 1) / 2.0);  // the sum, observed before anything divides
    for (size_t k = 0; k + 1 < seen.size(); ++k) {
      REQUIRE(seen[k].step >= 1);
      REQUIRE(seen[k].step <= seen[k].steps);
      REQUIRE(seen[k].steps == done.steps);
      if (k > 0) REQUIRE(seen[k].step > seen[k - 1].step);
    }
    REQUIRE(seen.front().value == comm.rank() + 1);  // before the first step: this rank's own
  }
}

TEST_CASE("every rank numbers the same round with the same step", "[steps]") {
  auto& comm = world();
  // On N not a power of two, the ranks that do not fold in must still count the fold-in step:
  // a trace, a timeout report or --explain that calls one round step 1 on one rank and step 2
  // on its partner misleads whoever reads them side by side.
  for (comm::Algorithm algorithm : {comm::Algorithm::recursive_doubling, comm::Algorithm::rabenseifner}) {
    CAPTURE(comm::algorithm_name(algorithm));
    Tensor buf = full({11}, 1.0, DType::float32);
    const std::vector<Seen> seen = observe_all_reduce(comm, algorithm, buf);
    int64_t first_round = -1;
    for (const Seen& s : seen)
      if (s.phase != "fold-in" && s.phase != "unfold" && s.phase != "done") {
        first_round = s.step;
        break;
      }
    const std::vector<int64_t> all = gather(comm, first_round);
    CAPTURE(all);
    // Who takes part in the rounds (comm/algorithms/power_of_two_fold.cpp): with P the largest power of two
    // <= N and E = N - P, the even rank of each of the first E pairs hands its buffer over and
    // sits them out; every other rank sees the first round as step 2, after the fold-in, or as
    // step 1 when there is no fold-in. A world of one has no rounds.
    const int N = comm.size();
    int P = 1;
    while (P * 2 <= N) P *= 2;
    const int extra = N - P;
    for (int r = 0; r < N; ++r) {
      CAPTURE(r);
      const bool sits_out = N == 1 || (r < 2 * extra && r % 2 == 0);
      REQUIRE(all[r] == (sits_out ? -1 : (extra > 0 ? 2 : 1)));
    }
  }
}

TEST_CASE("MPI's own collectives, blocking on host tensors, still tell the observer they are done",
          "[steps]") {
  // Such a call takes a shorter path than the others (docs/benchmarks.md); a set observer must move it back.
  auto& comm = world();
  const int N = comm.size();
  Tensor buf = full({5}, 1.0, DType::float32);
  buf.data<float>()[0] = static_cast<float>(comm.rank() + 1);
  const std::vector<Seen> seen = observe_all_reduce(comm, comm::Algorithm::native, buf);
  REQUIRE(seen.size() == 1);
  REQUIRE(seen[0].phase == "done");
  REQUIRE(seen[0].value == N * (N + 1) / 2.0);
}

// Every collective and every algorithm that implements it, against results each rank computes
// on its own: counts 0, 1, N−1, N+1, 1031 and 1,000,003; every dtype with every op that applies;
// in place and out of place; roots 0 and N−1. Wrong elements are summed over ranks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <thread>
#include <utility>

#include "comm/bootstrap/mpi_runtime.h"
#include "comm/transport/mpi/native_mpi.h"
#include "tests/support/mpi_test.h"

using namespace ringdp;
using namespace ringdp::testing;
using comm::Algorithm;

namespace {

const auto& kDtypes = kAllDtypes;
const auto& kOps = kAllOps;

std::vector<int64_t> counts() {
  const int64_t N = world().size();
  std::vector<int64_t> c = {0, 1, N + 1, 1031, 1000003};
  if (N > 1) c.push_back(N - 1);
  return c;
}

bool applies(ReduceOp op, DType dtype) { return is_floating(dtype) ? !is_bitwise(op) : op != ReduceOp::avg; }

// Large counts run for one op per dtype: the step structure does not depend on the op, and
// the full op × dtype matrix at 1M elements would dominate the suite's time.
bool worth_running(int64_t count, ReduceOp op, DType dtype) {
  if (count < 100000) return true;
  return op == (dtype == DType::int32 ? ReduceOp::max : ReduceOp::sum) ||
         (dtype == DType::float32 && op == ReduceOp::avg);
}

std::string label(const char* what, Algorithm a, DType d, ReduceOp op, int64_t count, bool in_place,
                  int root = -1) {
  std::ostringstream out;
  out << what << " algo=" << comm::algorithm_name(a) << " dtype=" << dtype_name(d)
      << " op=" << reduce_op_name(op) << " count=" << count << (in_place ? " in-place" : " out-of-place");
  if (root >= 0) out << " root=" << root;
  return out.str();
}

// Runs check(...) for every case and requires the total of wrong elements (all ranks) to be 0;
// reports which cases went wrong.
void require_all_right(const std::vector<std::pair<std::string, int64_t>>& wrong_by_case) {
  int64_t total = 0;
  for (const auto& [name, wrong] : wrong_by_case) {
    const int64_t all = global_sum(wrong);
    if (all) UNSCOPED_INFO(name << ": " << all << " wrong elements over all ranks");
    total += all;
  }
  REQUIRE(total == 0);
}

}  // namespace

TEST_CASE("all_reduce: every algorithm, dtype, op and count", "[collectives][all_reduce]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  std::vector<std::pair<std::string, int64_t>> results;
  std::vector<Algorithm> algorithms = {Algorithm::ring, Algorithm::recursive_doubling,
                                       Algorithm::rabenseifner, Algorithm::native, Algorithm::automatic};
  // Host tensors only; its host grouping comes from the nodes or RINGDP_RANKS_PER_HOST (meson.build).
  if (test_device().is_cpu()) algorithms.push_back(Algorithm::hierarchical);
  // Host tensors, every rank on one host; on several (tests/net) asking for it is an error that says why.
  if (test_device().is_cpu()) {
    try {
      comm.resolve(comm::CollectiveKind::all_reduce, 8, Algorithm::shared_memory);
      algorithms.push_back(Algorithm::shared_memory);
    } catch (const Error& e) {
      REQUIRE_THAT(e.what(), Catch::Contains("the shared_memory algorithm needs every rank on one host"));
    }
  }
  for (Algorithm algo : algorithms)
    for (DType dtype : kDtypes)
      for (ReduceOp op : kOps)
        for (int64_t count : counts()) {
          if (!applies(op, dtype) || !worth_running(count, op, dtype)) continue;
          for (bool in_place : {true, false}) {
            Tensor input = empty({count}, dtype, test_device());
            fill_input(input, rank, op);
            int64_t wrong = 0;
            if (in_place) {
              comm.all_reduce(input, op, {.algorithm = algo});
              wrong = count_wrong(input, N, op);
            } else {
              Tensor output = full({count}, -77.0, dtype, test_device());
              comm.all_reduce(input, output, op, {.algorithm = algo});
              wrong = count_wrong(output, N, op);
              Tensor pristine = empty({count}, dtype, test_device());
              fill_input(pristine, rank, op);
              wrong += input.to_vector() != pristine.to_vector();  // input untouched
            }
            results.emplace_back(label("all_reduce", algo, dtype, op, count, in_place), wrong);
          }
        }
  require_all_right(results);
}

TEST_CASE("reduce: tree and native, roots 0 and N-1", "[collectives][reduce]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  std::vector<std::pair<std::string, int64_t>> results;
  for (Algorithm algo : {Algorithm::tree, Algorithm::native})
    for (int root : {0, N - 1})
      for (DType dtype : kDtypes)
        for (ReduceOp op : kOps)
          for (int64_t count : counts()) {
            if (!applies(op, dtype) || !worth_running(count, op, dtype)) continue;
            for (bool in_place : {true, false}) {
              Tensor input = empty({count}, dtype, test_device());
              fill_input(input, rank, op);
              const std::vector<double> before = input.to_vector();
              int64_t wrong = 0;
              if (in_place) {
                comm.reduce(input, root, op, {.algorithm = algo});
                wrong = rank == root ? count_wrong(input, N, op) : input.to_vector() != before;
              } else {
                Tensor output = full({count}, -77.0, dtype, test_device());
                comm.reduce(input, output, root, op, {.algorithm = algo});
                if (rank == root) wrong = count_wrong(output, N, op);
                wrong += input.to_vector() != before;
              }
              results.emplace_back(label("reduce", algo, dtype, op, count, in_place, root), wrong);
            }
          }
  require_all_right(results);
}

TEST_CASE("broadcast: tree, chain and native, roots 0 and N-1", "[collectives][broadcast]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  std::vector<std::pair<std::string, int64_t>> results;
  for (Algorithm algo : {Algorithm::tree, Algorithm::chain, Algorithm::native})
    for (int root : {0, N - 1})
      for (DType dtype : kDtypes)
        for (int64_t count : counts()) {
          if (!worth_running(count, ReduceOp::sum, dtype)) continue;
          for (bool in_place : {true, false}) {
            // Everyone fills with its own rank's values; afterwards all must hold root's.
            Tensor input = empty({count}, dtype, test_device());
            fill_input(input, rank, ReduceOp::min);
            Tensor expected = empty({count}, dtype, test_device());
            fill_input(expected, root, ReduceOp::min);
            Tensor output = in_place ? input : full({count}, -77.0, dtype, test_device());
            if (in_place)
              comm.broadcast(input, root, {.algorithm = algo});
            else
              comm.broadcast(input, output, root, {.algorithm = algo});
            const auto got = output.to_vector(), want = expected.to_vector();
            int64_t wrong = 0;
            for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != want[i];
            results.emplace_back(label("broadcast", algo, dtype, ReduceOp::sum, count, in_place, root),
                                 wrong);
          }
        }
  require_all_right(results);
}

TEST_CASE("all_gather: ring and native", "[collectives][all_gather]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  std::vector<std::pair<std::string, int64_t>> results;
  for (Algorithm algo : {Algorithm::ring, Algorithm::native})
    for (DType dtype : kDtypes)
      for (int64_t count : counts()) {
        if (count > 100000 && dtype != DType::float32 && dtype != DType::bfloat16) continue;
        for (bool in_place : {true, false}) {
          // Rank r contributes input_value(r, r·count + i): the gathered whole is then the
          // sequence input_value(owner(j), j), checked element by element below.
          Tensor output = full({count * N}, -77.0, dtype, test_device());
          Tensor input =
              in_place ? output.flat_view(rank * count, count) : empty({count}, dtype, test_device());
          fill_input(input, rank, ReduceOp::min, rank * count);
          comm.all_gather(input, output, {.algorithm = algo});
          const auto got = output.to_vector();
          int64_t wrong = 0;
          for (int64_t j = 0; j < count * N; ++j)
            wrong += got[j] != input_value(static_cast<int>(j / count), j, ReduceOp::min, dtype);
          results.emplace_back(label("all_gather", algo, dtype, ReduceOp::sum, count, in_place), wrong);
        }
      }
  require_all_right(results);
}

TEST_CASE("reduce_scatter: ring and native", "[collectives][reduce_scatter]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  std::vector<std::pair<std::string, int64_t>> results;
  for (Algorithm algo : {Algorithm::ring, Algorithm::native})
    for (DType dtype : kDtypes)
      for (ReduceOp op : kOps)
        for (int64_t count : counts()) {
          if (!applies(op, dtype) || !worth_running(count, op, dtype)) continue;
          for (bool in_place : {true, false}) {
            Tensor input = empty({count * N}, dtype, test_device());
            fill_input(input, rank, op);
            Tensor output =
                in_place ? input.flat_view(rank * count, count) : full({count}, -77.0, dtype, test_device());
            comm.reduce_scatter(input, output, op, {.algorithm = algo});
            const int64_t wrong = count_wrong(output, N, op, rank * count);
            results.emplace_back(label("reduce_scatter", algo, dtype, op, count, in_place), wrong);
          }
        }
  require_all_right(results);
}

namespace {

// The block collectives (gather, scatter, all_to_all, all_gather with counts) move values and
// reduce nothing: every value below is input_value(sender, index in the sender's input, min, dtype),
// so each received element names the rank and the place it must have come from.
double block_value(int sender, int64_t index, DType dtype) {
  return input_value(sender, index, ReduceOp::min, dtype);
}

// Block sizes for the block collectives: 0, 1, N+1 (not divisible by N), 1031 and, for two
// dtypes, 1,000,003: the tree's and the exchange's segments, and MPI's two-part messages.
std::vector<int64_t> block_counts(DType dtype) {
  std::vector<int64_t> c = counts();
  if (dtype != DType::float32 && dtype != DType::int8) std::erase(c, int64_t{1000003});
  return c;
}

// An uneven count matrix: counts[i][j] elements go from rank i to rank j; many are 0 (with
// `salt` 0 the diagonal and whole rows), the rest differ in length (1 to 4 times `scale`).
std::vector<std::vector<int64_t>> count_matrix(int N, int salt, int64_t scale) {
  std::vector<std::vector<int64_t>> m(N, std::vector<int64_t>(N));
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) m[i][j] = ((i * 7 + j * 3 + salt) % 5) * scale;
  return m;
}

int64_t row_offset(const std::vector<int64_t>& row, int upto) {
  int64_t sum = 0;
  for (int j = 0; j < upto; ++j) sum += row[j];
  return sum;
}

}  // namespace

TEST_CASE("gather: tree and native, every root", "[collectives][gather]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  std::vector<std::pair<std::string, int64_t>> results;
  for (Algorithm algo : {Algorithm::tree, Algorithm::native, Algorithm::automatic})
    for (int root = 0; root < N; ++root)
      for (DType dtype : kDtypes)
        for (int64_t count : block_counts(dtype))
          for (bool in_place : {true, false}) {
            // In place: root's input is its own block of the output. Other ranks pass no output
            // (in place) or one that must stay untouched.
            Tensor output = rank == root ? full({count * N}, -77.0, dtype, test_device())
                            : in_place   ? Tensor()
                                         : full({3}, -77.0, dtype, test_device());
            Tensor input = in_place && rank == root ? output.flat_view(root * count, count)
                                                    : empty({count}, dtype, test_device());
            fill_input(input, rank, ReduceOp::min, rank * count);
            comm.gather(input, output, root, {.algorithm = algo});
            int64_t wrong = 0;
            if (rank == root) {
              const auto got = output.to_vector();
              for (int64_t j = 0; j < count * N; ++j)
                wrong += got[j] != block_value(static_cast<int>(j / count), j, dtype);
            } else if (output.defined()) {
              for (double v : output.to_vector()) wrong += v != in_dtype(dtype, -77.0);
            }
            results.emplace_back(label("gather", algo, dtype, ReduceOp::sum, count, in_place, root), wrong);
          }
  require_all_right(results);
}

TEST_CASE("scatter: tree and native, every root", "[collectives][scatter]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  std::vector<std::pair<std::string, int64_t>> results;
  for (Algorithm algo : {Algorithm::tree, Algorithm::native, Algorithm::automatic})
    for (int root = 0; root < N; ++root)
      for (DType dtype : kDtypes)
        for (int64_t count : block_counts(dtype))
          for (bool in_place : {true, false}) {
            // Root's input holds input_value(root, j) at every j; other ranks pass none (in place)
            // or one that must stay as it is.
            Tensor input = rank == root ? empty({count * N}, dtype, test_device())
                           : in_place   ? Tensor()
                                        : full({2}, -77.0, dtype, test_device());
            if (rank == root) fill_input(input, root, ReduceOp::min);
            Tensor output = in_place && rank == root ? input.flat_view(root * count, count)
                                                     : full({count}, -77.0, dtype, test_device());
            comm.scatter(input, output, root, {.algorithm = algo});
            const auto got = output.to_vector();
            int64_t wrong = 0;
            for (int64_t e = 0; e < count; ++e) wrong += got[e] != block_value(root, rank * count + e, dtype);
            if (rank == root) {
              const auto whole = input.to_vector();  // the root's input is left as it was
              for (int64_t j = 0; j < count * N; ++j) wrong += whole[j] != block_value(root, j, dtype);
            } else if (input.defined()) {
              for (double v : input.to_vector()) wrong += v != in_dtype(dtype, -77.0);
            }
            results.emplace_back(label("scatter", algo, dtype, ReduceOp::sum, count, in_place, root), wrong);
          }
  require_all_right(results);
}

TEST_CASE("all_to_all: pairwise and native, even blocks, in place and out of place",
          "[collectives][all_to_all]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  std::vector<std::pair<std::string, int64_t>> results;
  for (Algorithm algo : {Algorithm::pairwise, Algorithm::native, Algorithm::automatic})
    for (DType dtype : kDtypes)
      for (int64_t count : block_counts(dtype))
        for (bool in_place : {true, false}) {
          // count elements per block: rank r's input element j (block j / count) goes to rank j / count.
          Tensor input = empty({count * N}, dtype, test_device());
          fill_input(input, rank, ReduceOp::min);
          Tensor output = in_place ? input : full({count * N}, -77.0, dtype, test_device());
          comm.all_to_all(input, output, {.algorithm = algo});
          const auto got = output.to_vector();
          int64_t wrong = 0;
          for (int i = 0; i < N; ++i)
            for (int64_t e = 0; e < count; ++e)
              wrong += got[i * count + e] != block_value(i, rank * count + e, dtype);
          if (!in_place) {
            const auto sent = input.to_vector();  // left as it was
            for (int64_t j = 0; j < count * N; ++j) wrong += sent[j] != block_value(rank, j, dtype);
          }
          results.emplace_back(label("all_to_all", algo, dtype, ReduceOp::sum, count, in_place), wrong);
        }
  require_all_right(results);
}

TEST_CASE("all_to_all with counts: uneven blocks, empty ones included, in place too",
          "[collectives][all_to_all]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  std::vector<std::pair<std::string, int64_t>> results;
  for (Algorithm algo : {Algorithm::pairwise, Algorithm::native})
    for (DType dtype : kDtypes)
      for (int salt : {0, 1, 2})
        for (int64_t scale : {int64_t{1}, int64_t{301}, int64_t{0}}) {
          const auto m = count_matrix(N, salt, scale);
          std::vector<int64_t> send(N), recv(N);
          for (int j = 0; j < N; ++j) send[j] = m[rank][j], recv[j] = m[j][rank];
          // In place: one buffer as long as the longer side, input and output both starting at it.
          const bool in_place = salt == 2;
          Tensor buffer = empty({std::max(row_offset(send, N), row_offset(recv, N))}, dtype, test_device());
          Tensor input = in_place ? buffer.flat_view(0, row_offset(send, N))
                                  : empty({row_offset(send, N)}, dtype, test_device());
          fill_input(input, rank, ReduceOp::min);
          Tensor output = in_place ? buffer.flat_view(0, row_offset(recv, N))
                                   : full({row_offset(recv, N)}, -77.0, dtype, test_device());
          comm.all_to_all(input, send, output, recv, {.algorithm = algo});
          const auto got = output.to_vector();
          int64_t wrong = 0, at = 0;
          for (int i = 0; i < N; ++i)  // rank i's block for this rank starts at its row offset
            for (int64_t e = 0; e < m[i][rank]; ++e, ++at)
              wrong += got[at] != block_value(i, row_offset(m[i], rank) + e, dtype);
          std::ostringstream name;
          name << label("all_to_all counts", algo, dtype, ReduceOp::sum, row_offset(send, N), in_place)
               << " salt=" << salt << " scale=" << scale;
          results.emplace_back(name.str(), wrong);
        }
  require_all_right(results);
}

TEST_CASE("all_gather with counts: ring and native, uneven and empty blocks", "[collectives][all_gather_v]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  std::vector<std::pair<std::string, int64_t>> results;
  for (Algorithm algo : {Algorithm::ring, Algorithm::native, Algorithm::automatic})
    for (DType dtype : kDtypes)
      for (int salt : {0, 1, 3})
        for (int64_t scale : {int64_t{1}, int64_t{257}, int64_t{0}})
          for (bool in_place : {true, false}) {
            std::vector<int64_t> counts(N);
            for (int r = 0; r < N; ++r) counts[r] = ((r * 5 + salt) % 4) * scale;
            const int64_t total = row_offset(counts, N), mine = row_offset(counts, rank);
            Tensor output = full({total}, -77.0, dtype, test_device());
            Tensor input =
                in_place ? output.flat_view(mine, counts[rank]) : empty({counts[rank]}, dtype, test_device());
            fill_input(input, rank, ReduceOp::min, mine);
            comm.all_gather(input, output, counts, {.algorithm = algo});
            const auto got = output.to_vector();
            int64_t wrong = 0;
            for (int r = 0, j = 0; r < N; ++r)
              for (int64_t e = 0; e < counts[r]; ++e, ++j) wrong += got[j] != block_value(r, j, dtype);
            std::ostringstream name;
            name << label("all_gather counts", algo, dtype, ReduceOp::sum, total, in_place)
                 << " salt=" << salt << " scale=" << scale;
            results.emplace_back(name.str(), wrong);
          }
  require_all_right(results);
}

TEST_CASE("block collectives refuse bad arguments on every rank, naming the value",
          "[collectives][block_errors]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  using Catch::Contains;
  Tensor four = zeros({4}), whole = zeros({4 * N}), other = zeros({4 * N});
  for (int root : {-1, N}) {
    const std::string range =
        "root " + std::to_string(root) + " out of range for " + std::to_string(N) + " ranks";
    REQUIRE_THROWS_WITH(comm.gather(four, whole, root), Contains("gather: " + range));
    REQUIRE_THROWS_WITH(comm.scatter(whole, four, root), Contains("scatter: " + range));
  }
  // Sizes: only the root reads them, so only the root calls (the others would wait for it).
  Tensor short_whole = zeros({4 * N - 1});
  if (rank == N - 1) {
    REQUIRE_THROWS_WITH(comm.gather(four, short_whole, N - 1),
                        Contains("gather: root's output has " + std::to_string(4 * N - 1) +
                                 " elements; expected " + std::to_string(N) + " ranks x 4"));
    REQUIRE_THROWS_WITH(comm.scatter(short_whole, four, N - 1),
                        Contains("scatter: root's input has " + std::to_string(4 * N - 1) + " elements"));
  }
  REQUIRE_THROWS_WITH(comm.all_to_all(whole, short_whole), Contains("all_to_all: input has"));
  if (N > 1) {
    Tensor odd = zeros({4 * N + 1}), odd_out = zeros({4 * N + 1});
    REQUIRE_THROWS_WITH(comm.all_to_all(odd, odd_out),
                        Contains("not a multiple of " + std::to_string(N) + " ranks"));
  }
  Tensor both = zeros({4 * N + 1});  // overlapping without being one buffer: refused
  Tensor head = both.flat_view(0, 4 * N), shifted = both.flat_view(1, 4 * N);
  REQUIRE_THROWS_WITH(comm.all_to_all(head, shifted), Contains("all_to_all: the output overlaps the input"));
  std::vector<int64_t> fours(N, 4), short_counts(N + 1, 4), negative(N, 4);
  negative[N - 1] = -3;
  REQUIRE_THROWS_WITH(comm.all_to_all(whole, short_counts, other, fours),
                      Contains("send_counts has " + std::to_string(N + 1) +
                               " entries; expected one per rank, " + std::to_string(N)));
  REQUIRE_THROWS_WITH(comm.all_to_all(whole, fours, other, negative),
                      Contains("recv_counts[" + std::to_string(N - 1) + "] is -3"));
  std::vector<int64_t> more = fours;
  more[0] = 5;
  REQUIRE_THROWS_WITH(comm.all_to_all(whole, more, other, fours),
                      Contains("send_counts sum to " + std::to_string(4 * N + 1) + " but the input has " +
                               std::to_string(4 * N)));
  REQUIRE_THROWS_WITH(comm.all_to_all(head, fours, shifted, fours), Contains("output overlaps the input"));
  REQUIRE_THROWS_WITH(comm.all_gather(four, whole, short_counts),
                      Contains("counts has " + std::to_string(N + 1)));
  REQUIRE_THROWS_WITH(comm.all_gather(four, whole, negative),
                      Contains("counts[" + std::to_string(N - 1) + "] is -3"));
  REQUIRE_THROWS_WITH(comm.all_gather(four, short_whole, fours),
                      Contains("output has " + std::to_string(4 * N - 1) +
                               " elements; expected the sum of counts, " + std::to_string(4 * N)));
  std::vector<int64_t> mine_wrong = fours;
  mine_wrong[rank] = 3;
  REQUIRE_THROWS_WITH(comm.all_gather(four, whole, mine_wrong),
                      Contains("rank " + std::to_string(rank) + "'s input has 4 elements but counts[" +
                               std::to_string(rank) + "] is 3"));
  REQUIRE_THROWS_WITH(comm.all_to_all(whole, fours, short_whole, mine_wrong),
                      Contains("recv_counts[" + std::to_string(rank) + "] is 3 but send_counts["));
  // Nothing was half-sent: the communicator still works.
  Tensor one = ones({5});
  comm.all_reduce(one);
  REQUIRE(global_sum(one.item(4) != N) == 0);
}

TEST_CASE("native MPI refuses a count or displacement past INT_MAX, naming it",
          "[collectives][block_errors]") {
  // No buffer that large is allocated: the check comes before MPI is called, on every rank alike.
  const int N = world().size();
  const int64_t huge = int64_t{INT_MAX} + 5;
  std::vector<int64_t> counts(N, 1), offsets(N, 0), big(N, 1);
  big[N - 1] = huge;
  using enum comm::BlockExchange::Pattern;
  char byte = 0;
  for (auto pattern : {all_to_all, all_gather}) {
    const comm::BlockExchange e{.pattern = pattern,
                                .dtype = DType::int8,
                                .input = &byte,
                                .output = &byte,
                                .send_counts = counts,
                                .send_offsets = offsets,
                                .recv_counts = big,
                                .recv_offsets = offsets};
    REQUIRE_THROWS_WITH(comm::native::exchange(MPI_COMM_WORLD, e), Catch::Contains(std::to_string(huge)));
  }
  const comm::BlockExchange even{.pattern = all_to_all,
                                 .dtype = DType::int8,
                                 .input = &byte,
                                 .output = &byte,
                                 .send_counts = counts,
                                 .send_offsets = offsets,
                                 .recv_counts = counts,
                                 .recv_offsets = offsets,
                                 .block = huge};
  REQUIRE_THROWS_WITH(comm::native::exchange(MPI_COMM_WORLD, even),
                      Catch::Contains("at most 2147483647 elements, got " + std::to_string(huge)));
}

// Hidden: run by tests/mpi/meson.build on 2 ranks, expecting the job to fail with the message.
// Rank 0 expects another length from rank 1 than rank 1 sends it (RINGDP_TEST_A2A_MISMATCH:
// `longer`, 5 elements where 4 come, or `empty`, none where 4 come). The receive is sized from
// rank 0's own counts: the difference must be an Error (or under DETAIL a report before any
// block moves), never a write past the output. The Error ends the job: the exchange was cut short.
TEST_CASE("all_to_all with counts that disagree between ranks is stopped", "[.a2a-mismatch]") {
  auto& comm = world();
  REQUIRE(comm.size() == 2);
  const char* mode = std::getenv("RINGDP_TEST_A2A_MISMATCH");
  REQUIRE(mode != nullptr);
  const std::vector<int64_t> send = {4, 4};
  std::vector<int64_t> recv = {4, 4};
  if (comm.rank() == 0) recv[1] = std::string(mode) == "empty" ? 0 : 5;
  Tensor input = zeros({8}), output = zeros({recv[0] + recv[1]});
  try {
    comm.all_to_all(input, send, output, recv, {.algorithm = Algorithm::pairwise});
  } catch (const Error& e) {
    std::fprintf(stderr, "rank %d: %s\n", comm.rank(), e.what());
    // ringdp's own way out, not a bare MPI_Abort: under MPICH that lost this line in 2 runs of 40.
    comm::abort_job(3);
  }
}

TEST_CASE("8-bit sums and products wrap on overflow with every algorithm, native included",
          "[collectives][all_reduce][wrap]") {
  // Open MPI 4.1.4's op/avx saturates 8-bit MPI_SUM from 16 elements up (and MPICH 4.0.2 compares
  // MPI_UINT8_T as signed in MPI_MIN/MPI_MAX, which the matrix above catches); ringdp's native
  // algorithm must still give C's answer (comm/transport/mpi/native_mpi.cpp reduces 8-bit types with ringdp's
  // kernel).
  auto& comm = world();
  const int N = comm.size();
  std::vector<std::pair<std::string, int64_t>> results;
  for (Algorithm algo : {Algorithm::ring, Algorithm::recursive_doubling, Algorithm::rabenseifner,
                         Algorithm::native, Algorithm::automatic})
    for (DType dtype : {DType::int8, DType::uint8})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod}) {
        const double each = op == ReduceOp::prod ? 16 : dtype == DType::int8 ? 127 : 255;
        Tensor t = full({64}, each, dtype, test_device());
        comm.all_reduce(t, op, {.algorithm = algo});
        double exact = op == ReduceOp::prod ? 1 : 0;
        for (int r = 0; r < N; ++r) exact = op == ReduceOp::prod ? exact * each : exact + each;
        const double want = in_dtype(dtype, exact);
        int64_t wrong = 0;
        for (double v : t.to_vector()) wrong += v != want;
        results.emplace_back(label("all_reduce wrap", algo, dtype, op, 64, true), wrong);
      }
  require_all_right(results);
}

TEST_CASE("barrier: no rank leaves before the last one arrives", "[collectives][barrier]") {
  // The last rank arrives 20 ms late each time; every rank checks that it came out after that
  // arrival (one host: steady_clock is one clock for all its processes). A barrier that returned
  // at once would let the others out 20 ms early.
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  using Clock = std::chrono::steady_clock;
  const auto micros = [] {
    return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
  };
  int64_t early = 0;
  for (Algorithm algo : {Algorithm::dissemination, Algorithm::native, Algorithm::automatic}) {
    for (int round = 0; round < 3; ++round) {
      if (rank == N - 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const double arrived = micros();
      comm.barrier({.algorithm = algo});
      const double left = micros();
      Tensor last_arrival = full({1}, arrived, DType::float64);
      comm.all_reduce(last_arrival, ReduceOp::max, {.algorithm = Algorithm::native});
      early += left < last_arrival.item();
    }
  }
  REQUIRE(global_sum(early) == 0);
}

TEST_CASE("send/recv around a ring of ranks", "[collectives][p2p]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  if (N == 1) {
    REQUIRE_THROWS_WITH(comm.send(zeros({1}), 0), Catch::Contains("peer 0 is not another rank"));
    return;
  }
  Tensor outgoing = empty({1031}, DType::int64);
  fill_input(outgoing, rank, ReduceOp::sum);
  Tensor incoming = full({1031}, -77.0, DType::int64);
  // Asynchronous send first: with a blocking send on every rank the ring would deadlock.
  comm::Work sent = comm.send(outgoing, (rank + 1) % N, 5, {.async = true});
  comm.recv(incoming, (rank + N - 1) % N, 5);
  sent.wait();
  Tensor expected = empty({1031}, DType::int64);
  fill_input(expected, (rank + N - 1) % N, ReduceOp::sum);
  REQUIRE(global_sum(incoming.to_vector() != expected.to_vector()) == 0);
}

TEST_CASE("recv_any: the last rank hears every other rank, learning each sender", "[collectives][p2p]") {
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  int source = -7;
  if (N == 1) {
    Tensor t = zeros({1});
    REQUIRE_THROWS_WITH(comm.recv_any(t, &source), Catch::Contains("a world of one rank has no other rank"));
    return;
  }
  const int last = N - 1;
  if (rank != last) {
    // Every other rank sends twice: a blocking receive and an asynchronous one take one each.
    for (int k = 0; k < 2; ++k) comm.send(full({257}, rank * 10 + k, DType::int32), last, 9);
  } else {
    std::vector<int> heard;
    for (int k = 0; k < N - 1; ++k) {  // blocking
      Tensor t = full({257}, -1.0, DType::int32);
      comm.recv_any(t, &source, 9);
      heard.push_back(source);
      const auto got = t.to_vector();
      CHECK(std::all_of(got.begin(), got.end(),
                        [&](double v) { return v == source * 10 || v == source * 10 + 1; }));
    }
    std::vector<Tensor> tensors;
    std::vector<int> sources(static_cast<size_t>(N - 1), -7);
    std::vector<comm::Work> works;
    for (int k = 0; k < N - 1; ++k) {  // asynchronous, all posted before any completes
      tensors.push_back(full({257}, -1.0, DType::int32));
      works.push_back(comm.recv_any(tensors.back(), &sources[static_cast<size_t>(k)], 9, {.async = true}));
    }
    for (int k = 0; k < N - 1; ++k) {
      works[static_cast<size_t>(k)].wait();
      heard.push_back(sources[static_cast<size_t>(k)]);
      CHECK(tensors[static_cast<size_t>(k)].to_vector()[0] >= sources[static_cast<size_t>(k)] * 10);
    }
    std::sort(heard.begin(), heard.end());
    std::vector<int> want;
    for (int r = 0; r < N - 1; ++r) want.insert(want.end(), {r, r});
    std::sort(want.begin(), want.end());
    REQUIRE(heard == want);
  }
  Tensor unused = zeros({1});
  REQUIRE_THROWS_WITH(comm.recv_any(unused, nullptr), Catch::Contains("source is null"));
  comm.barrier();
}

// Hidden: run by tests/mpi/meson.build on 2 ranks, expecting the job to fail with the message.
// Rank 0 sends `sent` int32s where rank 1's recv_any takes 4: an Error (a shorter message passed
// unnoticed, the rest of the tensor stale), naming rank 0, the sender MPI found, not the "rank -1"
// a receive from any rank is posted with.
void recv_any_of_other_length(int64_t sent, bool async = false) {
  auto& comm = world();
  REQUIRE(comm.size() == 2);
  if (comm.rank() == 0) {
    comm.send(full({sent}, 1, DType::int32), 1, 9);
    return;
  }
  Tensor t = zeros({4}, DType::int32);
  int source = -7;
  comm::Work work = comm::Work::completed();
  try {
    work = comm.recv_any(t, &source, 9, {.async = async});  // blocking, the error comes from here
    // The message has arrived when wait() first polls: the poll, not the finishing loop, meets the
    // error (the path that left a released request to be tested again).
    if (async) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    work.wait();
  } catch (const Error& e) {
    // Asynchronous: the report is the second wait's, which must rethrow the error, not find the
    // request MPI released and call the receive done.
    std::string report = e.what();
    if (async) try {
        work.wait();
        report = "a second wait() called the receive done";
      } catch (const Error& again) {
        report = again.what();
      }
    std::fprintf(stderr, "rank %d: %s\n", comm.rank(), report.c_str());
    comm::abort_job(3);
  }
}
TEST_CASE("recv_any of a longer message names its sender", "[.recv-any-longer]") {
  recv_any_of_other_length(8);
}
TEST_CASE("recv_any of a shorter message names its sender", "[.recv-any-shorter]") {
  recv_any_of_other_length(2);
}
TEST_CASE("recv_any of a longer message, asynchronous, names its sender", "[.recv-any-longer-async]") {
  recv_any_of_other_length(8, true);
}
TEST_CASE("recv_any of a shorter message, asynchronous, names its sender", "[.recv-any-shorter-async]") {
  recv_any_of_other_length(2, true);
}

TEST_CASE("an asynchronous recv is served after another recv between the same ranks fails",
          "[collectives][p2p]") {
  // A receive that fails (a longer message) ends its own request only: the UCX transport once ended
  // every request it had pending, and the earlier asynchronous recv's Work then tested a released
  // request (a use after free; the review of 2026-12-06).
  auto& comm = world();
  // Rank 1 sends the awaited message only once told the failure is over: the receive is still
  // posted, unmatched, when the other one fails.
  if (comm.size() >= 2 && comm.rank() == 1) {
    comm.send(full({4}, 7.0), 0, 6);
    Tensor go = zeros({1});
    comm.recv(go, 0, 7);
    comm.send(full({3}, 5.0), 0, 5);
  }
  if (comm.size() >= 2 && comm.rank() == 0) {
    Tensor later = zeros({3});
    comm::Work work = comm.recv(later, 1, 5, {.async = true});
    Tensor small = zeros({2});
    REQUIRE_THROWS_WITH(comm.recv(small, 1, 6), Catch::Contains("longer message"));
    comm.send(zeros({1}), 1, 7);
    work.wait();
    REQUIRE(later.to_vector() == full({3}, 5.0).to_vector());
  }
  comm.barrier();
}

TEST_CASE("send/recv between two ranks leaves the others' collectives in step", "[collectives][p2p]") {
  // Only ranks 0 and 1 exchange; the rest go straight to the all_reduce, whose tags must still
  // match theirs (with 2 ranks everyone takes part, so this can only fail with 3 or more).
  auto& comm = world();
  const int N = comm.size(), rank = comm.rank();
  if (N < 2) return;
  for (int round = 0; round < 3; ++round) {
    if (rank == 0) comm.send(full({5}, 42.0 + round), 1, round);
    if (rank == 1) {
      Tensor got = zeros({5});
      comm.recv(got, 0, round);
      CHECK(got.to_vector() == std::vector<double>(5, 42.0 + round));
    }
    Tensor x = full({3}, rank + 1.0);
    comm.all_reduce(x);
    REQUIRE(global_sum(x.to_vector() != std::vector<double>(3, N * (N + 1) / 2.0)) == 0);
  }
}

TEST_CASE("every rank runs with the same segment size and algorithm thresholds", "[collectives][agree]") {
  // They come from each rank's environment and node; init agrees on the minimum.
  auto& comm = world();
  const auto& o = comm.options();
  for (const uint64_t value :
       {uint64_t{o.segment_bytes}, uint64_t{o.recursive_doubling_max_bytes},
        uint64_t{o.chain_broadcast_min_bytes}, uint64_t{o.rabenseifner_max_bytes},
        uint64_t{o.shared_memory_max_bytes}, uint64_t{o.shared_memory_scatter_min_bytes},
        uint64_t{o.shared_memory_slot_bytes}}) {
    Tensor t = full({1}, static_cast<double>(value), DType::float64);
    Tensor low = t.clone(), high = t.clone();
    comm.all_reduce(low, ReduceOp::min, {.algorithm = Algorithm::native});
    comm.all_reduce(high, ReduceOp::max, {.algorithm = Algorithm::native});
    REQUIRE(low.item() == high.item());
  }
}

TEST_CASE("float32 sums of random data are bit-identical on every rank", "[collectives][determinism]") {
  auto& comm = world();
  for (Algorithm algo :
       {Algorithm::ring, Algorithm::recursive_doubling, Algorithm::rabenseifner, Algorithm::shared_memory}) {
    // Shared memory needs host tensors and every rank on one host.
    if (!comm.available(comm::CollectiveKind::all_reduce, test_device()).contains(algo)) continue;
    for (int64_t count : {int64_t{7}, int64_t{4099}, int64_t{300007}}) {
      Tensor data = randn({count}, 1000 + comm.rank(), 0.0, 1e3);
      comm.all_reduce(data, ReduceOp::sum, {.algorithm = algo});
      // FNV-1a over the bytes; every rank must have the same hash as rank 0.
      uint64_t hash = 1469598103934665603ull;
      const auto* bytes = static_cast<const unsigned char*>(data.data_ptr());
      for (size_t i = 0; i < data.nbytes(); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
      Tensor mine = full({1}, 0.0, DType::int64);
      mine.data<int64_t>()[0] = static_cast<int64_t>(hash);
      Tensor root_hash = mine.clone();
      comm.broadcast(root_hash, 0, {.algorithm = Algorithm::native});
      INFO("algo " << comm::algorithm_name(algo) << " count " << count);
      REQUIRE(global_sum(root_hash.data<int64_t>()[0] != mine.data<int64_t>()[0]) == 0);
    }
  }
}

// Hidden: run by the net suite (tests/net/meson.build) on hosts made of network namespaces, with
// RINGDP_TEST_RANKS_PER_HOST saying how many ranks each host holds (consecutive ranks, the
// hostfile's slots). Each rank must find its local rank, the size of its host, and, where ranks
// span hosts and share one, `auto` choosing the hierarchical all-reduce for large messages.
TEST_CASE("ranks find their host: local rank, host size, hierarchical by default", "[.hosts]") {
  auto& comm = world();
  const char* env = std::getenv("RINGDP_TEST_RANKS_PER_HOST");
  REQUIRE(env != nullptr);
  const int per_host = std::atoi(env);
  REQUIRE(per_host > 0);
  const int64_t wrong_local = global_sum(comm.local_rank() != comm.rank() % per_host ? 1 : 0);
  const int64_t wrong_size = global_sum(comm.local_size() != per_host ? 1 : 0);
  CHECK(wrong_local == 0);
  CHECK(wrong_size == 0);
  const bool spans = comm.size() > per_host && per_host > 1;
  CHECK((comm.resolve(comm::CollectiveKind::all_reduce, 1 << 20, Algorithm::automatic) ==
         Algorithm::hierarchical) == spans);
}

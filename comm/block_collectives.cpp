// The collectives that move blocks without reducing them (comm/communicator.h): gather, scatter,
// all_to_all (even and uneven) and the uneven all_gather, described as comm/collectives.cpp
// describes the others: a descriptor holds the Issue, the library call (`library`, one
// BlockExchange for every pattern) and the body on the executor. Receives are sized from this
// rank's own arguments only: with ringdp's algorithms a peer that sends more (or less) than they
// say is an Error at the receive (comm/transport/envelope.h), never a write past the output; the libraries'
// own calls (native) are only as strict as the library (comm/communicator.h, all_to_all). Tested by
// tests/mpi/test_collectives.cpp
// ([gather], [scatter], [all_to_all], [all_gather_v]) and tests/cli/bench.sh.
#include <numeric>
#include <vector>

#include "comm/algorithms/fingerprint.h"
#include "comm/collective_checks.h"
#include "comm/communicator_state.h"

namespace ringdp::comm {

namespace {

std::vector<int64_t> offsets_of(std::span<const int64_t> counts) {
  std::vector<int64_t> offsets(counts.size(), 0);
  if (!counts.empty()) std::exclusive_scan(counts.begin(), counts.end(), offsets.begin(), int64_t{0});
  return offsets;
}

/// The counts and offsets of a BlockExchange, owned: a queued call carries its own copy.
struct Blocks {
  std::vector<int64_t> send_counts, send_offsets, recv_counts, recv_offsets;
  BlockExchange on(BlockExchange::Pattern pattern, DType dtype, const void* input, void* output, int root,
                   int64_t block) const {
    return {.pattern = pattern,
            .dtype = dtype,
            .input = input,
            .output = output,
            .send_counts = send_counts,
            .send_offsets = send_offsets,
            .recv_counts = recv_counts,
            .recv_offsets = recv_offsets,
            .root = root,
            .block = block};
  }
};

// Blocks of n elements each, one per rank, at 0, n, 2n, ...
std::vector<int64_t> even_counts(int size, int64_t n) { return std::vector<int64_t>(size, n); }
std::vector<int64_t> even_offsets(int size, int64_t n) {
  std::vector<int64_t> offsets(size);
  for (int i = 0; i < size; ++i) offsets[i] = i * n;
  return offsets;
}

// BlockExchange's layout of a rooted pattern: `many` are the root's N blocks of n (gather's
// receives, scatter's sends), `one` the single block every rank has on the other side.
Blocks rooted_blocks(bool gather, int rank, int root, int size, int64_t n) {
  std::vector<int64_t> one(size, 0), many = even_counts(size, rank == root ? n : 0);
  one[root] = n;
  std::vector<int64_t> zeros(size, 0), offsets = even_offsets(size, n);
  if (gather)
    return {.send_counts = one, .send_offsets = zeros, .recv_counts = many, .recv_offsets = offsets};
  return {.send_counts = many, .send_offsets = offsets, .recv_counts = one, .recv_offsets = zeros};
}

void* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

struct Gather {
  Issue issue;
  int rank;
  Blocks blocks;

  bool at_root() const { return rank == issue.root; }
  void library(Transport& t, const Tensor& in, void* out) const {
    t.native_exchange(
        blocks.on(BlockExchange::Pattern::gather, issue.dtype, in.data_ptr(), out, issue.root, issue.count));
  }
  void operator()(Call& call, const Tensor& input, Tensor& output) const {
    const Tensor& in = call.view(input);
    // Only root's output is written; other ranks may pass none.
    const Tensor* out = at_root() ? &call.view(output) : nullptr;
    void* out_data = out ? out->data_ptr() : nullptr;
    if (call.native())
      library(call.ctx.transport, in, out_data);
    else
      gather_tree(call.ctx, in.data_ptr(), out_data, call.effective(issue.count), issue.root);
    call.ctx.end_steps();
    call.settle();
    if (out) call.write_back(output, *out);
  }
};

struct Scatter {
  Issue issue;
  int rank;
  Blocks blocks;

  bool at_root() const { return rank == issue.root; }
  void library(Transport& t, const void* in, const Tensor& out) const {
    t.native_exchange(
        blocks.on(BlockExchange::Pattern::scatter, issue.dtype, in, out.data_ptr(), issue.root, issue.count));
  }
  void operator()(Call& call, const Tensor& input, Tensor& output) const {
    // Only root's input is read; other ranks may pass none.
    const void* in = at_root() ? call.view(input).data_ptr() : nullptr;
    const Tensor& out = call.view(output);
    if (call.native())
      library(call.ctx.transport, in, out);
    else
      scatter_tree(call.ctx, in, out.data_ptr(), call.effective(issue.count), issue.root);
    call.ctx.end_steps();
    call.settle();
    call.write_back(output, out);
  }
};

// In place (one buffer for input and output) the input is first copied aside, into the
// transport's scratch slot 1: every algorithm, and the libraries' calls, would otherwise overwrite
// block i with rank i's block before sending it. The copy costs one pass over the input.
const void* set_aside(Transport& t, const Tensor& in, const Tensor& out) {
  if (in.nbytes() == 0 || in.data_ptr() != out.data_ptr()) return in.data_ptr();
  void* copy = t.scratch(1, in.nbytes());
  t.copy(copy, in.data_ptr(), in.nbytes());
  return copy;
}

struct AllToAll {
  Issue issue;
  Blocks blocks;
  int64_t block;  ///< elements per block of the even form; -1 for the uneven one

  BlockExchange on(const void* in, void* out) const {
    return blocks.on(BlockExchange::Pattern::all_to_all, issue.dtype, in, out, -1, block);
  }
  void library(Transport& t, const Tensor& in, const Tensor& out) const {
    t.native_exchange(on(set_aside(t, in, out), out.data_ptr()));
  }
  void operator()(Call& call, const Tensor& input, Tensor& output) const {
    if (block < 0 && call.executor->checks_calls())
      call.executor->check_pairwise_counts(blocks.send_counts, blocks.recv_counts, call.ctx.tag);
    const Tensor& in = call.view(input);
    const Tensor& out = output.is_same(input) ? in : call.view(output);
    if (call.native())
      library(call.ctx.transport, in, out);
    else
      all_to_all_pairwise(call.ctx, on(set_aside(call.ctx.transport, in, out), out.data_ptr()), block >= 0);
    call.ctx.end_steps();
    call.settle();
    call.write_back(output, out);
  }
};

struct AllGatherUneven {
  Issue issue;
  int rank;
  Blocks blocks;  // receives: counts and offsets; sends: this rank's count to every rank

  void library(Transport& t, const Tensor& in, const Tensor& out) const {
    t.native_exchange(
        blocks.on(BlockExchange::Pattern::all_gather, issue.dtype, in.data_ptr(), out.data_ptr(), -1, -1));
  }
  void operator()(Call& call, const Tensor& input, Tensor& output) const {
    const Tensor& in = call.view(input);
    const Tensor& out = call.view(output);
    if (call.native())
      library(call.ctx.transport, in, out);
    else
      all_gather_ring_uneven(call.ctx, in.data_ptr(), out.data_ptr(), blocks.recv_counts,
                             blocks.recv_offsets);
    call.ctx.end_steps();
    call.settle();
    call.write_back(output, out);
  }
};

}  // namespace

Work Communicator::gather(const Tensor& input, Tensor& output, int root, CollectiveOptions opts) {
  State& state = *state_;
  check_root(root, size_, "gather");
  RINGDP_CHECK(input.defined(), "gather: undefined input");
  const int64_t n = input.numel();
  if (rank_ == root) {
    check_pair(input, output, "gather");
    RINGDP_CHECK(output.numel() == n * size_, "gather: root's output has ", output.numel(),
                 " elements; expected ", size_, " ranks x ", n, " = ", n * size_);
    check_overlap(input, output, "gather", output, input, root * input.nbytes());
  }
  const Gather collective{
      .issue = {.kind = CollectiveKind::gather,
                .dtype = input.dtype(),
                .count = n,
                .algorithm = resolve(CollectiveKind::gather, input.nbytes(), opts.algorithm),
                .root = root,
                .route = state.routes_.route_for(input),
                .requested = opts},
      .rank = rank_,
      .blocks = rooted_blocks(true, rank_, root, size_, n)};
  if (state.executor_.run_direct(
          collective.issue, [&] { collective.library(state.routes_.host(), input, data_or_null(output)); }))
    return Work::returned();
  return state.run(collective, input, output);
}

Work Communicator::scatter(const Tensor& input, Tensor& output, int root, CollectiveOptions opts) {
  State& state = *state_;
  check_root(root, size_, "scatter");
  RINGDP_CHECK(output.defined(), "scatter: undefined output");
  const int64_t n = output.numel();
  if (rank_ == root) {
    check_pair(input, output, "scatter");
    RINGDP_CHECK(input.numel() == n * size_, "scatter: root's input has ", input.numel(),
                 " elements; expected ", size_, " ranks x ", n, " = ", n * size_);
    check_overlap(input, output, "scatter", input, output, root * output.nbytes());
  }
  const Scatter collective{
      .issue = {.kind = CollectiveKind::scatter,
                .dtype = output.dtype(),
                .count = n,
                .algorithm = resolve(CollectiveKind::scatter, output.nbytes(), opts.algorithm),
                .root = root,
                .route = state.routes_.route_for(output),
                .requested = opts},
      .rank = rank_,
      .blocks = rooted_blocks(false, rank_, root, size_, n)};
  if (state.executor_.run_direct(
          collective.issue, [&] { collective.library(state.routes_.host(), data_or_null(input), output); }))
    return Work::returned();
  return state.run(collective, input, output);
}

Work Communicator::all_to_all(const Tensor& input, Tensor& output, CollectiveOptions opts) {
  State& state = *state_;
  check_pair(input, output, "all_to_all");
  RINGDP_CHECK(input.numel() == output.numel(), "all_to_all: input has ", input.numel(), " elements, output ",
               output.numel());
  RINGDP_CHECK(input.numel() % size_ == 0, "all_to_all: input has ", input.numel(),
               " elements, not a multiple of ", size_, " ranks (use the form with counts for uneven blocks)");
  check_overlap(input, output, "all_to_all", input, output, 0);
  const int64_t n = input.numel() / size_;
  std::vector<int64_t> counts = even_counts(size_, n), offsets = even_offsets(size_, n);
  const AllToAll collective{
      .issue = {.kind = CollectiveKind::all_to_all,
                .dtype = input.dtype(),
                .count = n,
                .algorithm = resolve(CollectiveKind::all_to_all, input.nbytes(), opts.algorithm),
                .route = state.routes_.route_for(input),
                .requested = opts},
      .blocks = {.send_counts = counts,
                 .send_offsets = offsets,
                 .recv_counts = counts,
                 .recv_offsets = offsets},
      .block = n};
  if (state.executor_.run_direct(collective.issue,
                                 [&] { collective.library(state.routes_.host(), input, output); }))
    return Work::returned();
  return state.run(collective, input, output);
}

Work Communicator::all_to_all(const Tensor& input, std::span<const int64_t> send_counts, Tensor& output,
                              std::span<const int64_t> recv_counts, CollectiveOptions opts) {
  State& state = *state_;
  check_pair(input, output, "all_to_all");
  const int64_t sent = check_counts(send_counts, size_, "all_to_all", "send_counts");
  const int64_t received = check_counts(recv_counts, size_, "all_to_all", "recv_counts");
  RINGDP_CHECK(sent == input.numel(), "all_to_all: send_counts sum to ", sent, " but the input has ",
               input.numel(), " elements");
  RINGDP_CHECK(received == output.numel(), "all_to_all: recv_counts sum to ", received,
               " but the output has ", output.numel(), " elements");
  RINGDP_CHECK(recv_counts[rank_] == send_counts[rank_], "all_to_all: rank ", rank_,
               "'s own block: recv_counts[", rank_, "] is ", recv_counts[rank_], " but send_counts[", rank_,
               "] is ", send_counts[rank_]);
  check_overlap(input, output, "all_to_all", input, output, 0);
  Blocks blocks{.send_counts = {send_counts.begin(), send_counts.end()},
                .send_offsets = offsets_of(send_counts),
                .recv_counts = {recv_counts.begin(), recv_counts.end()},
                .recv_offsets = offsets_of(recv_counts)};
  const AllToAll collective{
      .issue = {.kind = CollectiveKind::all_to_all,
                .dtype = input.dtype(),
                .count = sent,
                .algorithm = resolve(CollectiveKind::all_to_all, input.nbytes(), opts.algorithm),
                .route = state.routes_.route_for(input),
                .requested = opts,
                .layout = 1,  // uneven: never equal to an even all_to_all's 0
                .per_rank_count = true},
      .blocks = std::move(blocks),
      .block = -1};
  if (state.executor_.run_direct(collective.issue,
                                 [&] { collective.library(state.routes_.host(), input, output); }))
    return Work::returned();
  return state.run(collective, input, output);
}

Work Communicator::all_gather(const Tensor& input, Tensor& output, std::span<const int64_t> counts,
                              CollectiveOptions opts) {
  State& state = *state_;
  check_pair(input, output, "all_gather");
  const int64_t total = check_counts(counts, size_, "all_gather", "counts");
  RINGDP_CHECK(input.numel() == counts[rank_], "all_gather: rank ", rank_, "'s input has ", input.numel(),
               " elements but counts[", rank_, "] is ", counts[rank_]);
  RINGDP_CHECK(output.numel() == total, "all_gather: output has ", output.numel(),
               " elements; expected the sum of counts, ", total);
  std::vector<int64_t> offsets = offsets_of(counts);
  check_overlap(input, output, "all_gather", output, input, offsets[rank_] * dtype_size(input.dtype()));
  const AllGatherUneven collective{
      .issue = {.kind = CollectiveKind::all_gather,
                .dtype = input.dtype(),
                .count = total,
                .algorithm = resolve(CollectiveKind::all_gather, output.nbytes(), opts.algorithm),
                .route = state.routes_.route_for(input),
                .requested = opts,
                .layout = counts_hash(counts)},
      .rank = rank_,
      .blocks = {.send_counts = std::vector<int64_t>(size_, counts[rank_]),
                 .send_offsets = std::vector<int64_t>(size_, 0),
                 .recv_counts = {counts.begin(), counts.end()},
                 .recv_offsets = std::move(offsets)}};
  if (state.executor_.run_direct(collective.issue,
                                 [&] { collective.library(state.routes_.host(), input, output); }))
    return Work::returned();
  return state.run(collective, input, output);
}

}  // namespace ringdp::comm

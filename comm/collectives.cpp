// The collectives of comm/communicator.h, each described once: a descriptor checks the call's
// arguments and holds its Issue, its library call (`library`), what follows the reduction
// (`finish`: avg's division) and its body on the executor (`operator()`). The direct path (no
// watcher: comm/execution/execution.h) and the queued body both use the same library call and finish, so
// neither is written twice. Tested by tests/mpi/test_collectives.cpp (every collective, in and
// out of place, every dtype and op, 1-4 ranks) and tests/cli/bench.sh.
#include <algorithm>
#include <cstddef>
#include <optional>

#include "comm/collective_checks.h"
#include "comm/communicator_state.h"
#include "tensor/ops.h"

namespace ringdp::comm {

namespace {

void check_op(ReduceOp op, DType dtype) {
  RINGDP_CHECK(op != ReduceOp::avg || is_floating(dtype), "reduce op avg is not defined for ",
               dtype_name(dtype), " tensors; use sum and divide, or a floating-point dtype");
  RINGDP_CHECK(!is_bitwise(op) || !is_floating(dtype), "reduce op ", reduce_op_name(op),
               " is not defined for ", dtype_name(dtype), " tensors; it takes integers or bool");
}

void check_same_numel(const Tensor& input, const Tensor& output, const char* what) {
  RINGDP_CHECK(input.numel() == output.numel(), what, ": input has ", input.numel(), " elements, output ",
               output.numel());
}

// avg's division of a result the collective wrote through `out` (a handle the body may not own).
// On the caller's stream (CollectiveOptions::stream), which waits for the collective: on the
// legacy stream a side stream's reader would not wait for the division.
void scale_result(const Tensor& out, double alpha, const Issue& issue) {
  Tensor handle = out;
  ops::scale_(handle, alpha, issue.requested.stream);
}

// The reductions' op on the wire: avg travels as sum, divided once at the end.
ReduceOp wire_op(ReduceOp op) { return op == ReduceOp::avg ? ReduceOp::sum : op; }

// Whether an all-reduce starts by copying its input into its output: recursive doubling,
// Rabenseifner and the hierarchical scheme work in place on the output; the ring and shared
// memory read the input, so they copy only the tail an injected count fault leaves out (and
// shared memory on one rank, which reduces nothing).
bool copies_first(Algorithm algorithm, bool count_fault, int size) {
  switch (algorithm) {
    case Algorithm::recursive_doubling:
    case Algorithm::rabenseifner:
    case Algorithm::hierarchical: return true;
    case Algorithm::shared_memory: return count_fault || size == 1;
    case Algorithm::ring: return count_fault;
    default: return false;
  }
}

struct AllReduce {
  Issue issue;
  int size;
  size_t scatter_min_bytes;
  size_t rd_max_bytes;
  bool uniform_hosts;
  Transport* host_transport;  // the hierarchical all-reduce's; null in a world of one without MPI
  Transport* cross_transport;
  /// Both tensors in the communicator's shared allocations: where, for the direct all-reduce.
  const SharedAllocations* allocations;
  std::optional<SharedPlace> input_place, output_place;

  bool direct() const { return input_place && output_place; }

  void library(Transport& t, const Tensor& in, const Tensor& out, int64_t n) const {
    t.native_all_reduce(in.data_ptr(), out.data_ptr(), n, in.dtype(), issue.op);
  }
  void finish(const Tensor& out) const {
    if (issue.op == ReduceOp::avg) scale_result(out, 1.0 / size, issue);
  }
  void operator()(Call& call, const Tensor& input, Tensor& output) const;
  void hierarchical(Call& call, void* buf, int64_t n) const;
};

void AllReduce::operator()(Call& call, const Tensor& input, Tensor& output) const {
  const Tensor& in = call.view(input);
  const Tensor& out = output.is_same(input) ? in : call.view(output);
  call.ctx.op = wire_op(issue.op);
  const int64_t n = call.effective(in.numel());
  Transport& transport = call.ctx.transport;
  // The ring and Rabenseifner divide as each part completes (CollectiveContext::scale); on
  // device memory, and for the others, the division is a pass of its own after the collective.
  const bool divides_as_it_goes =
      issue.op == ReduceOp::avg && size > 1 && !transport.device_memory() &&
      (call.algorithm == Algorithm::ring || call.algorithm == Algorithm::rabenseifner ||
       (call.algorithm == Algorithm::shared_memory && direct())) &&
      n == in.numel();
  if (divides_as_it_goes) call.ctx.scale = 1.0 / size;
  if (copies_first(call.algorithm, n < in.numel(), size))
    transport.copy(out.data_ptr(), in.data_ptr(), in.nbytes());
  switch (call.algorithm) {
    case Algorithm::native: library(transport, in, out, n); break;
    case Algorithm::recursive_doubling: all_reduce_recursive_doubling(call.ctx, out.data_ptr(), n); break;
    case Algorithm::rabenseifner: all_reduce_rabenseifner(call.ctx, out.data_ptr(), n); break;
    case Algorithm::hierarchical: hierarchical(call, out.data_ptr(), n); break;
    case Algorithm::shared_memory:
      if (size > 1 && direct())
        all_reduce_shared_direct(call.ctx, *transport.shared_slots(), *allocations, *input_place,
                                 *output_place, n);
      else if (size > 1)
        all_reduce_shared(call.ctx, *transport.shared_slots(), in.data_ptr(), out.data_ptr(), n,
                          scatter_min_bytes);
      break;
    default: all_reduce_ring(call.ctx, in.data_ptr(), out.data_ptr(), n); break;
  }
  call.ctx.end_steps();  // the observer sees the sum, unless the algorithm divided as it went
  call.settle();
  if (!divides_as_it_goes) finish(out);
  call.write_back(output, out);
}

void AllReduce::hierarchical(Call& call, void* buf, int64_t n) const {
  if (!host_transport) {  // one host without MPI (a world of one, or a store's): the host is the world
    all_reduce_ring(call.ctx, buf, buf, n);
    return;
  }
  CollectiveContext host = call.context_on(*host_transport);
  CollectiveContext cross = call.context_on(*cross_transport);
  host.corrupt_next_receive = call.ctx.corrupt_next_receive;
  all_reduce_hierarchical(host, cross, buf, n, uniform_hosts, rd_max_bytes);
}

struct Reduce {
  Issue issue;
  int rank;
  int size;

  bool at_root() const { return rank == issue.root; }
  // Only root's output is written (the tree accumulates elsewhere on other ranks, and the
  // libraries ignore a non-root receive buffer), so other ranks pass their input in its place.
  const Tensor& destination(const Tensor& in, const Tensor& out, bool same) const {
    return at_root() && !same ? out : in;
  }
  void library(Transport& t, const Tensor& in, const Tensor& out) const {
    t.native_reduce(in.data_ptr(), out.data_ptr(), in.numel(), in.dtype(), issue.op, issue.root);
  }
  void finish(const Tensor& out) const {
    if (at_root() && issue.op == ReduceOp::avg) scale_result(out, 1.0 / size, issue);
  }
  void operator()(Call& call, const Tensor& input, Tensor& output) const {
    const Tensor& in = call.view(input);
    const Tensor& out = at_root() && !output.is_same(input) ? call.view(output) : in;
    call.ctx.op = wire_op(issue.op);
    if (call.native())
      library(call.ctx.transport, in, out);
    else
      reduce_tree(call.ctx, in.data_ptr(), out.data_ptr(), call.effective(in.numel()), issue.root);
    call.ctx.end_steps();
    call.settle();
    finish(out);
    if (at_root()) call.write_back(output, out);
  }
};

struct Broadcast {
  Issue issue;
  int rank;

  // Root's input goes into its own output first: every algorithm sends from the output.
  void prepare(Transport& t, const Tensor& in, const Tensor& out, bool same) const {
    if (rank == issue.root && !same) t.copy(out.data_ptr(), in.data_ptr(), in.nbytes());
  }
  void library(Transport& t, const Tensor& out) const {
    t.native_broadcast(out.data_ptr(), out.numel(), out.dtype(), issue.root);
  }
  void operator()(Call& call, const Tensor& input, Tensor& output) const {
    const Tensor& out = call.view(output);
    if (rank == issue.root && !output.is_same(input))
      prepare(call.ctx.transport, call.view(input), out, false);
    if (call.native())
      library(call.ctx.transport, out);
    else if (call.algorithm == Algorithm::chain)
      broadcast_chain(call.ctx, out.data_ptr(), call.effective(out.numel()), issue.root);
    else
      broadcast_tree(call.ctx, out.data_ptr(), call.effective(out.numel()), issue.root);
    call.ctx.end_steps();
    call.settle();
    call.write_back(output, out);
  }
};

struct AllGather {
  Issue issue;

  void library(Transport& t, const Tensor& in, const Tensor& out) const {
    t.native_all_gather(in.data_ptr(), out.data_ptr(), in.numel(), in.dtype());
  }
  void operator()(Call& call, const Tensor& input, Tensor& output) const {
    const Tensor& in = call.view(input);
    const Tensor& out = call.view(output);
    if (call.native())
      library(call.ctx.transport, in, out);
    else
      all_gather_ring(call.ctx, in.data_ptr(), out.data_ptr(), call.effective(in.numel()));
    call.ctx.end_steps();
    call.settle();
    call.write_back(output, out);
  }
};

struct ReduceScatter {
  Issue issue;
  int size;

  void library(Transport& t, const Tensor& in, const Tensor& out) const {
    t.native_reduce_scatter(in.data_ptr(), out.data_ptr(), out.numel(), in.dtype(), issue.op);
  }
  void finish(const Tensor& out) const {
    if (issue.op == ReduceOp::avg) scale_result(out, 1.0 / size, issue);
  }
  void operator()(Call& call, const Tensor& input, Tensor& output) const {
    const Tensor& in = call.view(input);
    const Tensor& out = call.view(output);
    call.ctx.op = wire_op(issue.op);
    if (call.native())
      library(call.ctx.transport, in, out);
    else
      reduce_scatter_ring(call.ctx, in.data_ptr(), out.data_ptr(), call.effective(out.numel()));
    call.ctx.end_steps();  // the observer sees the sum, before avg's division
    call.settle();
    finish(out);
    call.write_back(output, out);
  }
};

struct Barrier {
  Issue issue;

  void library(Transport& t) const { t.native_barrier(); }
  void operator()(Call& call, const Tensor&, Tensor&) const {
    if (call.native())
      library(call.ctx.transport);
    else
      barrier_dissemination(call.ctx);
  }
};

}  // namespace

Work Communicator::all_reduce(Tensor& tensor, ReduceOp op, CollectiveOptions opts) {
  return all_reduce(tensor, tensor, op, opts);
}

Work Communicator::all_reduce(const Tensor& input, Tensor& output, ReduceOp op, CollectiveOptions opts) {
  State& state = *state_;
  check_pair(input, output, "all_reduce");
  check_overlap(input, output, "all_reduce", input, output, 0);
  check_same_numel(input, output, "all_reduce");
  check_op(op, input.dtype());
  const Route route = state.routes_.route_for(input);
  // A look over a few address ranges, and none at all until allocate_shared was called.
  std::optional<SharedPlace> input_place, output_place;
  if (route == Route::host && !state.shared_allocations_.empty()) {
    input_place = state.shared_allocations_.find(input.data_ptr(), input.nbytes());
    output_place = state.shared_allocations_.find(output.data_ptr(), output.nbytes());
  }
  const bool shared_buffers = input_place && output_place;
  const Algorithm algorithm =
      opts.algorithm == Algorithm::native
          ? Algorithm::native
          : choose_algorithm(CollectiveKind::all_reduce, input.nbytes(), opts.algorithm, route,
                             state.topology(size_), options_, shared_buffers)
                .algorithm;
  const AllReduce collective{.issue = {.kind = CollectiveKind::all_reduce,
                                       .dtype = input.dtype(),
                                       .count = input.numel(),
                                       .algorithm = algorithm,
                                       .op = op,
                                       .route = route,
                                       .requested = opts,
                                       .shape = ShapeNote::of(input.shape())},
                             .size = size_,
                             .scatter_min_bytes = options_.shared_memory_scatter_min_bytes,
                             .rd_max_bytes = options_.recursive_doubling_max_bytes,
                             .uniform_hosts = state.world_.uniform_hosts,
                             .host_transport = state.world_.host_transport.get(),
                             .cross_transport = state.world_.cross_transport.get(),
                             .allocations = &state.shared_allocations_,
                             .input_place = shared_buffers ? input_place : std::nullopt,
                             .output_place = shared_buffers ? output_place : std::nullopt};
  if (state.executor_.run_direct(collective.issue, [&] {
        collective.library(state.routes_.host(), input, output, input.numel());
        collective.finish(output);
      }))
    return Work::returned();
  return state.run(collective, input, output);
}

Work Communicator::reduce(Tensor& tensor, int root, ReduceOp op, CollectiveOptions opts) {
  return reduce(tensor, tensor, root, op, opts);
}

Work Communicator::reduce(const Tensor& input, Tensor& output, int root, ReduceOp op,
                          CollectiveOptions opts) {
  State& state = *state_;
  check_pair(input, output, "reduce");
  check_overlap(input, output, "reduce", input, output, 0);
  check_root(root, size_, "reduce");
  check_same_numel(input, output, "reduce");
  check_op(op, input.dtype());
  const Reduce collective{
      .issue = {.kind = CollectiveKind::reduce,
                .dtype = input.dtype(),
                .count = input.numel(),
                .algorithm = resolve(CollectiveKind::reduce, input.nbytes(), opts.algorithm),
                .op = op,
                .root = root,
                .route = state.routes_.route_for(input),
                .requested = opts,
                .shape = ShapeNote::of(input.shape())},
      .rank = rank_,
      .size = size_};
  if (state.executor_.run_direct(collective.issue, [&] {
        const Tensor& out = collective.destination(input, output, output.is_same(input));
        collective.library(state.routes_.host(), input, out);
        collective.finish(output);
      }))
    return Work::returned();
  return state.run(collective, input, output);
}

Work Communicator::broadcast(Tensor& tensor, int root, CollectiveOptions opts) {
  return broadcast(tensor, tensor, root, opts);
}

Work Communicator::broadcast(const Tensor& input, Tensor& output, int root, CollectiveOptions opts) {
  State& state = *state_;
  check_pair(input, output, "broadcast");
  check_overlap(input, output, "broadcast", input, output, 0);
  check_root(root, size_, "broadcast");
  check_same_numel(input, output, "broadcast");
  const Broadcast collective{
      .issue = {.kind = CollectiveKind::broadcast,
                .dtype = input.dtype(),
                .count = input.numel(),
                .algorithm = resolve(CollectiveKind::broadcast, input.nbytes(), opts.algorithm),
                .root = root,
                .route = state.routes_.route_for(input),
                .requested = opts,
                .shape = ShapeNote::of(input.shape())},
      .rank = rank_};
  if (state.executor_.run_direct(collective.issue, [&] {
        collective.prepare(state.routes_.host(), input, output, output.is_same(input));
        collective.library(state.routes_.host(), output);
      }))
    return Work::returned();
  return state.run(collective, input, output);
}

Work Communicator::all_gather(const Tensor& input, Tensor& output, CollectiveOptions opts) {
  State& state = *state_;
  check_pair(input, output, "all_gather");
  check_overlap(input, output, "all_gather", output, input, rank_ * input.nbytes());
  RINGDP_CHECK(output.numel() == input.numel() * size_, "all_gather: output has ", output.numel(),
               " elements; expected ", size_, " ranks x ", input.numel(), " = ", input.numel() * size_);
  const AllGather collective{
      .issue = {.kind = CollectiveKind::all_gather,
                .dtype = input.dtype(),
                .count = input.numel(),
                .algorithm = resolve(CollectiveKind::all_gather, output.nbytes(), opts.algorithm),
                .route = state.routes_.route_for(input),
                .requested = opts,
                .shape = ShapeNote::of(input.shape())}};
  if (state.executor_.run_direct(collective.issue,
                                 [&] { collective.library(state.routes_.host(), input, output); }))
    return Work::returned();
  return state.run(collective, input, output);
}

Work Communicator::reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op, CollectiveOptions opts) {
  State& state = *state_;
  check_pair(input, output, "reduce_scatter");
  check_overlap(input, output, "reduce_scatter", input, output, rank_ * output.nbytes());
  RINGDP_CHECK(input.numel() == output.numel() * size_, "reduce_scatter: input has ", input.numel(),
               " elements; expected ", size_, " ranks x ", output.numel(), " = ", output.numel() * size_);
  check_op(op, input.dtype());
  const ReduceScatter collective{
      .issue = {.kind = CollectiveKind::reduce_scatter,
                .dtype = input.dtype(),
                .count = output.numel(),
                .algorithm = resolve(CollectiveKind::reduce_scatter, input.nbytes(), opts.algorithm),
                .op = op,
                .route = state.routes_.route_for(input),
                .requested = opts,
                .shape = ShapeNote::of(output.shape())},
      .size = size_};
  if (state.executor_.run_direct(collective.issue, [&] {
        collective.library(state.routes_.host(), input, output);
        collective.finish(output);
      }))
    return Work::returned();
  return state.run(collective, input, output);
}

Work Communicator::barrier(CollectiveOptions opts) {
  State& state = *state_;
  const Barrier collective{.issue = {.kind = CollectiveKind::barrier,
                                     .algorithm = resolve(CollectiveKind::barrier, 0, opts.algorithm),
                                     .requested = opts}};
  if (state.executor_.run_direct(collective.issue, [&] { collective.library(state.routes_.host()); }))
    return Work::returned();
  Tensor none;
  return state.run(collective, none, none);
}

}  // namespace ringdp::comm

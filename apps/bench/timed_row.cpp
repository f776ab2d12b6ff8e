// Implements apps/bench/timed_row.h (the contract is documented there). Tested by tests/cli/bench.sh (table,
// corrupt).
#include "apps/bench/timed_row.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "kernels/device_memory.h"

namespace ringdp::bench {

namespace {
using Clock = std::chrono::steady_clock;

// Combines this rank's time across ranks as -a says: 0 rank 0, 1 mean, 2 min, 3 max.
double combine(comm::Communicator& comm, double seconds, int average) {
  if (average == 0) {
    Tensor t = full({1}, seconds, DType::float64);
    comm.broadcast(t, 0);
    return t.item();
  }
  return over_ranks(comm, seconds,
                    average == 2   ? ReduceOp::min
                    : average == 3 ? ReduceOp::max
                                   : ReduceOp::avg);
}
// A row's tensor: its own, zeroed, or a view of the start of the shared buffer (the same place on
// every rank, as the direct all-reduce needs).
Tensor buffer(const Tensor& shared, int64_t count, DType dtype, Device device) {
  if (!shared.defined()) return zeros({count}, dtype, device);
  RINGDP_CHECK(static_cast<size_t>(count) * dtype_size(dtype) <= shared.nbytes(), "--buffers shared: ", count,
               " elements of ", dtype_name(dtype), " exceed the shared buffer of ", shared.nbytes(),
               " bytes");
  return Tensor::borrow(shared.data_ptr(), {count}, dtype);
}

// One untimed call with the step observer on: the algorithm it reports as it ends is the one that
// ran. `auto` resolves per call, by size, route and where the buffers lie (the direct all-reduce
// on --buffers shared at every size), which Communicator::resolve() alone cannot see. The last
// end seen is the collective's own (a composed algorithm's stages end before it does).
std::string run_observed(const CollectiveSpec& spec, const Case& c, Tensor& input, Tensor& output) {
  auto seen = std::make_shared<std::atomic<int>>(-1);
  c.comm.set_step_observer([seen](const comm::Position& where) {
    if (where.phase == comm::Phase::done) seen->store(static_cast<int>(where.algorithm));
  });
  run_collective(spec, c, input, output, false);
  c.comm.set_step_observer({});  // off again before anything is timed: each step would cost a jump
  const int ran = seen->load();
  return ran < 0 ? std::string() : comm::algorithm_name(static_cast<comm::Algorithm>(ran));
}
}  // namespace

const char* short_type(DType d) {
  switch (d) {
    case DType::float32: return "float";
    case DType::float64: return "double";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::bfloat16: return "bfloat16";
    case DType::float16: return "half";
    case DType::int8: return "int8";
    case DType::uint8: return "uint8";
    case DType::boolean: return "bool";
  }
  return "?";
}

Row time_row(const CollectiveSpec& spec, const Case& c, int64_t elements, const Timing& timing) {
  comm::Communicator& comm = c.comm;
  const int N = comm.size();
  const int64_t in_count = spec.input_count(elements, N), out_count = spec.output_count(elements, N);
  const int64_t count = std::max(in_count, out_count);
  Row row{spec.name,
          comm::algorithm_name(c.algorithm),
          "",
          short_type(c.dtype),
          spec.has_op ? reduce_op_name(c.op) : "none",
          spec.has_root ? c.root : -1,
          count * static_cast<int64_t>(dtype_size(c.dtype)),
          count,
          {0, 0},
          {0, 0},
          {0, 0},
          {0, 0}};
  bool observed = false;  // by one untimed call of the row's first pass that has one
  for (int in_place = 0; in_place < 2; ++in_place) {
    Tensor input = buffer(timing.shared_input, in_count, c.dtype, timing.device);
    Tensor output = buffer(timing.shared_output, out_count, c.dtype, timing.device);
    if (in_place) {
      // In place: the output is the input itself, or the rank's chunk of it.
      if (spec.kind == comm::CollectiveKind::all_gather || spec.kind == comm::CollectiveKind::gather)
        input = output.flat_view(comm.rank() * in_count, in_count);
      else if (spec.kind == comm::CollectiveKind::reduce_scatter ||
               spec.kind == comm::CollectiveKind::scatter)
        output = input.flat_view(comm.rank() * out_count, out_count);
      else
        output = input;
    }
    fill_verifiable(spec, c, input);
    // An untimed call: the row's first one also says which algorithm ran.
    const auto untimed = [&] {
      if (observed) return void(run_collective(spec, c, input, output, false));
      row.ran = run_observed(spec, c, input, output);
      observed = true;
    };
    for (int i = 0; i < timing.warmup; ++i) untimed();
    std::vector<comm::Work> works;
    // Asynchronous calls are kept and waited for at the end; blocking ones have finished when
    // they return, and keeping them would time the bench's own stores (24 bytes of new memory per
    // call, page faults included: about 0.1 us of an 8-byte call on 2 ranks, issue #20).
    if (!timing.blocking) works.reserve(static_cast<size_t>(timing.iters));  // no reallocation when timed
    comm.barrier();  // ours, not MPI_Barrier: covered by the watchdog
    const auto start = Clock::now();
    if (timing.blocking) {
      for (int i = 0; i < timing.iters; ++i) run_collective(spec, c, input, output, false);
    } else {
      for (int i = 0; i < timing.iters; ++i) works.push_back(run_collective(spec, c, input, output, true));
      for (auto& w : works) w.wait();
    }
    // A collective on CUDA tensors returns once enqueued: time the GPU's work, as nccl-tests does.
    if (timing.device.is_cuda()) kernels::cuda_device_synchronize();
    const double mine = std::chrono::duration<double>(Clock::now() - start).count() / timing.iters;
    const double seconds = combine(comm, mine, timing.average);
    int64_t wrong = 0;
    for (int i = 0; i < timing.check; ++i) {
      fill_verifiable(spec, c, input);
      untimed();
      wrong += count_wrong(spec, c, output);
    }
    wrong = static_cast<int64_t>(over_ranks(comm, static_cast<double>(wrong), ReduceOp::sum));
    row.time_us[in_place] = seconds * 1e6;
    row.algbw[in_place] = seconds > 0 ? static_cast<double>(row.bytes) / seconds / 1e9 : 0;
    row.busbw[in_place] = row.algbw[in_place] * spec.bus_factor(N);
    row.wrong[in_place] = timing.check ? wrong : -1;
  }
  return row;
}

}  // namespace ringdp::bench

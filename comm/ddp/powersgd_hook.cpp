// Implements comm/ddp/powersgd_hook.h (the algorithm and its steps 1-7 are described there).
// Tested by tests/mpi/test_comm_hooks.cpp.
#include "comm/ddp/powersgd_hook.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "comm/ddp/default_hooks.h"
#include "comm/ddp/low_rank.h"
#include "core/error.h"
#include "core/timeline.h"
#include "tensor/ops.h"

namespace ringdp::ddp {

namespace {
// One compressed gradient: M (rows x cols, a view of the bucket) and where its P (rows x r) and
// Q (cols x r) sit in the bucket's P and Q buffers.
struct Layer {
  Tensor matrix;
  int64_t rows, cols;
  int rank;
  int64_t p_offset, q_offset;
};

// Step 2's split of a bucket, with the sizes of its P and Q buffers.
struct Plan {
  std::vector<Layer> compressed;
  std::vector<Tensor> uncompressed;  // views of the bucket, flat
  int64_t uncompressed_elements = 0, p_elements = 0, q_elements = 0;
};

Plan plan_bucket(PowerSgdState& state, const GradBucket& bucket) {
  Plan plan;
  for (const Tensor& gradient : bucket.gradients) {
    const int64_t rows = gradient.dim() == 0 ? 1 : gradient.size(0);
    const int64_t cols = rows == 0 ? 0 : gradient.numel() / rows;
    const int rank =
        static_cast<int>(std::min<int64_t>({rows, cols, state.options.matrix_approximation_rank}));
    const int64_t compressed_size = (rows + cols) * rank;
    state.elements_before += gradient.numel();
    if (static_cast<double>(compressed_size) * state.options.min_compression_rate <
        static_cast<double>(gradient.numel())) {
      plan.compressed.push_back(
          {gradient.reshape({rows, cols}), rows, cols, rank, plan.p_elements, plan.q_elements});
      plan.p_elements += rows * rank;
      plan.q_elements += cols * rank;
      state.elements_after += compressed_size;
    } else {
      plan.uncompressed.push_back(gradient.reshape({gradient.numel()}));
      plan.uncompressed_elements += gradient.numel();
      state.elements_after += gradient.numel();
    }
  }
  return plan;
}

Tensor factor(const Tensor& memory, int64_t offset, int64_t rows, int rank) {
  return memory.flat_view(offset, rows * rank).reshape({rows, rank});
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Step 3: every rank draws the same Q, as state (random_seed, draws) is the same everywhere.
void prepare_q(PowerSgdState& state, const Plan& plan, const Tensor& q_memory, bool fresh) {
  const uint64_t seed = splitmix64(state.options.random_seed ^ splitmix64(fresh ? state.draws++ : 0));
  for (size_t i = 0; i < plan.compressed.size(); ++i) {
    const Layer& layer = plan.compressed[i];
    Tensor q = factor(q_memory, layer.q_offset, layer.cols, layer.rank);
    if (fresh) q.copy_from(randn({layer.cols, layer.rank}, seed + i, 0.0, 1.0, q.dtype()));
    orthogonalize_columns(q, state.options.orthogonalization_epsilon);
  }
}

// Steps 5 to 7, once the uncompressed and P all-reduces have been issued.
struct Pending {
  int index;
  bool last;
  comm::Algorithm algorithm;
  Tensor buffer{}, input{};  // input: the bucket after error feedback (undefined without it)
  Plan plan{};
  Tensor flat{};  // the uncompressed gradients, concatenated
  comm::Work flat_reduced{};
  Tensor p_memory{}, q_memory{};
};

// The hook's local work between its collectives, as a span of its own on the timeline (the
// collectives record themselves), so a trace tells the products' cost from the communication's.
void name_bucket(timeline::Scope& span, int index) {
  if (span.active()) span.set_args(detail::concat("\"bucket\": ", index));
}

void finish_bucket(PowerSgdState& state, Pending& work) {
  comm::Communicator& comm = *state.comm;
  const double inverse_size = 1.0 / comm.size();
  work.flat_reduced.wait();
  std::optional<timeline::Scope> span(std::in_place, "comm_hook", "powersgd: Q = M^T P");
  name_bucket(*span, work.index);
  ops::scale_(work.flat, inverse_size);
  int64_t at = 0;
  for (Tensor& gradient : work.plan.uncompressed) {
    gradient.copy_from(work.flat.flat_view(at, gradient.numel()));
    at += gradient.numel();
  }
  for (const Layer& layer : work.plan.compressed) {
    Tensor p = factor(work.p_memory, layer.p_offset, layer.rows, layer.rank);
    orthogonalize_columns(p, state.options.orthogonalization_epsilon);
    Tensor q = factor(work.q_memory, layer.q_offset, layer.cols, layer.rank);
    matmul_into(layer.matrix, true, p, false, q);
  }
  span.reset();
  if (work.q_memory.numel() > 0) comm.all_reduce(work.q_memory, ReduceOp::sum, {.algorithm = work.algorithm});
  span.emplace("comm_hook", "powersgd: M = P Q^T");
  name_bucket(*span, work.index);
  ops::scale_(work.q_memory, inverse_size);
  for (const Layer& layer : work.plan.compressed) {
    Tensor p = factor(work.p_memory, layer.p_offset, layer.rows, layer.rank);
    Tensor q = factor(work.q_memory, layer.q_offset, layer.cols, layer.rank);
    Tensor matrix = layer.matrix;
    matmul_into(p, false, q, true, matrix);
  }
  if (state.options.use_error_feedback) state.errors[work.index] = ops::add(work.input, work.buffer, -1.0);
  if (!state.options.warm_start) {
    state.p_memory.erase(work.index);
    state.q_memory.erase(work.index);
  }
  if (work.last) ++state.iteration;
}
}  // namespace

PowerSgdState::PowerSgdState(std::shared_ptr<comm::Communicator> communicator, PowerSgdOptions opts)
    : comm(std::move(communicator)), options(opts) {
  RINGDP_CHECK(comm != nullptr, "PowerSGD: no communicator");
  RINGDP_CHECK(options.matrix_approximation_rank >= 1, "PowerSGD: matrix_approximation_rank ",
               options.matrix_approximation_rank, " must be at least 1");
  RINGDP_CHECK(options.start_powerSGD_iter >= 0, "PowerSGD: start_powerSGD_iter must not be negative");
  RINGDP_CHECK(options.min_compression_rate >= 0, "PowerSGD: min_compression_rate must not be negative");
}

comm::Work powersgd_hook(PowerSgdState& state, GradBucket& bucket) {
  comm::Communicator& comm = *state.comm;
  if (state.iteration < state.options.start_powerSGD_iter) {  // vanilla all-reduce until then
    if (bucket.last) ++state.iteration;
    return allreduce_hook(comm, bucket);
  }
  Tensor buffer = bucket.buffer;
  RINGDP_CHECK(buffer.device().is_cpu(), "PowerSGD: bucket ", bucket.index, " is on ", buffer.device().str(),
               "; ringdp's PowerSGD computes on the host only");
  RINGDP_CHECK(buffer.dtype() == DType::float32 || buffer.dtype() == DType::float64, "PowerSGD: bucket ",
               bucket.index, " is ", dtype_name(buffer.dtype()), "; float32 or float64 expected");
  const int index = bucket.index;
  Pending work{.index = index, .last = bucket.last, .algorithm = bucket.algorithm, .buffer = buffer};
  std::optional<timeline::Scope> span(std::in_place, "comm_hook", "powersgd: P = M Q");
  name_bucket(*span, index);
  if (state.options.use_error_feedback) {  // step 1
    auto [error, created] = state.errors.try_emplace(index, zeros({buffer.numel()}, buffer.dtype()));
    if (!created) ops::add_(buffer, error->second);
    work.input = buffer.clone();
  }
  work.plan = plan_bucket(state, bucket);
  const bool fresh = !state.options.warm_start || !state.p_memory.contains(index);
  if (fresh) {
    state.p_memory[index] = zeros({work.plan.p_elements}, buffer.dtype());
    state.q_memory[index] = zeros({work.plan.q_elements}, buffer.dtype());
  }
  work.p_memory = state.p_memory[index];
  work.q_memory = state.q_memory[index];
  prepare_q(state, work.plan, work.q_memory, fresh);
  for (const Layer& layer : work.plan.compressed) {  // step 4: P = M·Q
    Tensor p = factor(work.p_memory, layer.p_offset, layer.rows, layer.rank);
    matmul_into(layer.matrix, false, factor(work.q_memory, layer.q_offset, layer.cols, layer.rank), false, p);
  }
  work.flat = zeros({work.plan.uncompressed_elements}, buffer.dtype());
  int64_t at = 0;
  for (const Tensor& gradient : work.plan.uncompressed) {
    Tensor slice = work.flat.flat_view(at, gradient.numel());
    slice.copy_from(gradient);
    at += gradient.numel();
  }
  span.reset();
  // Issued in this order on every rank; the Q all-reduce follows from wait() (grad_bucket.h).
  work.flat_reduced = work.flat.numel() > 0 ? comm.all_reduce(work.flat, ReduceOp::sum,
                                                              {.algorithm = work.algorithm, .async = true})
                                            : comm::Work::completed();
  comm::Work p_reduced =
      work.p_memory.numel() > 0
          ? comm.all_reduce(work.p_memory, ReduceOp::sum, {.algorithm = work.algorithm, .async = true})
          : comm::Work::completed();
  bucket.bytes_communicated = static_cast<int64_t>(
      (work.flat.numel() + work.p_memory.numel() + work.q_memory.numel()) * dtype_size(buffer.dtype()));
  auto pending = std::make_shared<Pending>(std::move(work));
  return comm::Work::then(
      p_reduced, [&state, pending] { finish_bucket(state, *pending); }, [] { return false; });
}

}  // namespace ringdp::ddp

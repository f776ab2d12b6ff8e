// DDP communication hooks (comm/ddp/grad_bucket.h) under mpirun with 1-4 ranks: the default hook
// equals no hook bit for bit; the fp16/bf16 hooks equal their definition (cast, divide, sum, cast
// back) element by element; PowerSGD keeps its error-feedback invariant, reproduces a gradient of
// rank r exactly, and trains a model about as far as the plain average does. Against PyTorch:
// tests/cli/train.sh (comm_hook_torch).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/layers.h"
#include "autograd/optim/sgd.h"
#include "comm/ddp/default_hooks.h"
#include "comm/ddp/distributed_data_parallel.h"
#include "comm/ddp/low_rank.h"
#include "comm/ddp/powersgd_hook.h"
#include "tensor/ops.h"
#include "tests/support/mpi_test.h"

using namespace ringdp;
using namespace ringdp::testing;
using namespace ringdp::autograd;

namespace {

// A bucket over `shapes`, its gradients views of one flat float64/float32 buffer.
ddp::GradBucket make_bucket(const std::vector<Shape>& shapes, DType dtype, int index = 0, bool last = true) {
  int64_t total = 0;
  for (const Shape& s : shapes) total += shape_numel(s);
  ddp::GradBucket bucket{.index = index, .last = last, .buffer = zeros({total}, dtype)};
  int64_t at = 0;
  for (const Shape& s : shapes) {
    bucket.gradients.push_back(bucket.buffer.flat_view(at, shape_numel(s)).reshape(s));
    at += shape_numel(s);
  }
  return bucket;
}

// This rank's gradient at `step`, element i: different per rank, step and element.
double gradient_value(int rank, int step, int64_t i) {
  return std::sin(0.7 * i + 1.3 * rank + 0.31 * step) + 0.05 * rank;
}

std::shared_ptr<Module> make_mlp() {
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Linear>(LinearOptions(6, 16), 3), std::make_shared<ReLU>(),
      std::make_shared<Linear>(LinearOptions(16, 16), 4), std::make_shared<ReLU>(),
      std::make_shared<Linear>(LinearOptions(16, 1), 5)});
}

struct TrainResult {
  std::vector<double> parameters;
  double last_loss = 0;  // mean over ranks of the last step's loss
};

// `steps` of SGD on this rank's slice of a fixed regression set; `hook` registered when set.
TrainResult train(int steps, const std::function<void(ddp::DistributedDataParallel&)>& hook,
                  double bucket_mb = 25) {
  auto& comm = world();
  auto model = make_mlp();
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05));
  ddp::DistributedDataParallel ddp(model, world_ptr(),
                                   {.bucket_cap_mb = bucket_mb, .first_bucket_mb = bucket_mb});
  if (hook) hook(ddp);
  const Tensor w = randn({6, 1}, 77, 0.0, 1.0);
  TrainResult result;
  for (int step = 0; step < steps; ++step) {
    Tensor x = randn({8, 6}, 1000 + step * 16 + comm.rank(), 0.0, 1.0);
    Tensor y = zeros({8, 1});
    for (int64_t b = 0; b < 8; ++b) {
      double v = 0;
      for (int64_t f = 0; f < 6; ++f) v += x.at({b, f}) * w.item(f);
      y.set_item(b, std::tanh(v));
    }
    sgd.zero_grad();
    Tensor loss = mse_loss(ddp(x), y);
    ddp.backward(loss);
    sgd.step();
    Tensor total = full({1}, loss.item());
    comm.all_reduce(total, ReduceOp::avg);
    result.last_loss = total.item();
  }
  for (const Tensor& p : model->parameters())
    for (double v : p.to_vector()) result.parameters.push_back(v);
  return result;
}

// Every rank's copy of `values` equals rank 0's, bit for bit.
bool same_on_every_rank(const std::vector<double>& values) {
  Tensor mine = from_vector(values, {static_cast<int64_t>(values.size())}, DType::float64);
  Tensor root = mine.clone();
  world().broadcast(root, 0);
  int64_t differing = 0;
  for (int64_t i = 0; i < mine.numel(); ++i) differing += mine.item(i) != root.item(i);
  return global_sum(differing) == 0;
}

}  // namespace

TEST_CASE("the default hook is exactly DDP without a hook", "[comm_hook]") {
  const TrainResult plain = train(6, nullptr, 0.001);
  const TrainResult hooked = train(
      6, [](ddp::DistributedDataParallel& d) { d.register_comm_hook(world_ptr(), ddp::allreduce_hook); },
      0.001);
  REQUIRE(plain.parameters == hooked.parameters);
}

TEST_CASE("fp16 and bf16 hooks: cast, divide by N, sum, cast back", "[comm_hook]") {
  const int N = world().size(), rank = world().rank();
  for (DType dtype : {DType::float16, DType::bfloat16}) {
    ddp::GradBucket bucket = make_bucket({{7, 3}, {7}}, DType::float32);
    for (int64_t i = 0; i < bucket.buffer.numel(); ++i) bucket.buffer.set_item(i, gradient_value(rank, 0, i));
    ddp::compress_hook(world(), bucket, dtype).wait();
    REQUIRE(bucket.bytes_communicated == bucket.buffer.numel() * 2);
    int64_t wrong = 0;
    for (int64_t i = 0; i < bucket.buffer.numel(); ++i) {
      // Each rank's share, rounded twice (cast, then divide) as the hook does.
      double exact = 0;
      std::vector<double> shares;
      for (int r = 0; r < N; ++r) {
        const Tensor cast = full({1}, static_cast<float>(gradient_value(r, 0, i)), DType::float32).to(dtype);
        Tensor share = cast.clone();
        ops::scale_(share, 1.0 / N);
        shares.push_back(share.item());
        exact += share.item();
      }
      const double got = bucket.buffer.item(i);
      // Two ranks: one rounded addition, whichever order. More: the ring's order of additions is
      // the algorithm's, so within the rounding of N-1 additions in the compressed dtype.
      const double ulp = dtype == DType::float16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
      const double expected = N <= 2 ? full({1}, exact, DType::float64).to(dtype).item() : exact;
      const double tolerance = N <= 2 ? 0.0 : (N - 1) * ulp * (std::fabs(exact) + 1.0);
      if (std::fabs(got - expected) > tolerance) {
        if (wrong < 3)
          UNSCOPED_INFO(dtype_name(dtype) << " element " << i << ": " << got << " vs " << expected);
        ++wrong;
      }
      // The result is representable in the compressed dtype: it went through it.
      if (full({1}, got, DType::float64).to(dtype).item() != got) ++wrong;
    }
    REQUIRE(global_sum(wrong) == 0);
    REQUIRE(same_on_every_rank(bucket.buffer.to_vector()));
  }
}

TEST_CASE("fp16 and bf16 hooks train as the plain average does, within their rounding", "[comm_hook]") {
  const TrainResult plain = train(10, nullptr);
  for (auto hook : {ddp::fp16_compress_hook, ddp::bf16_compress_hook}) {
    const TrainResult compressed =
        train(10, [hook](ddp::DistributedDataParallel& d) { d.register_comm_hook(world_ptr(), hook); });
    REQUIRE(same_on_every_rank(compressed.parameters));
    for (size_t i = 0; i < plain.parameters.size(); ++i)
      REQUIRE(compressed.parameters[i] == Approx(plain.parameters[i]).margin(2e-2));
  }
}

TEST_CASE("register_comm_hook: once, before the first backward", "[comm_hook]") {
  auto model = make_mlp();
  ddp::DistributedDataParallel ddp(model, world_ptr());
  ddp.register_comm_hook(world_ptr(), ddp::allreduce_hook);
  REQUIRE_THROWS_WITH(ddp.register_comm_hook(world_ptr(), ddp::allreduce_hook),
                      Catch::Contains("only be called once"));
  auto other = make_mlp();
  ddp::DistributedDataParallel late(other, world_ptr());
  late.backward(mse_loss(late(ones({2, 6})), zeros({2, 1})));
  REQUIRE_THROWS_WITH(late.register_comm_hook(world_ptr(), ddp::allreduce_hook),
                      Catch::Contains("before the first backward"));
}

TEST_CASE("Gram-Schmidt gives orthonormal columns spanning the input's", "[comm_hook][low_rank]") {
  Tensor m = randn({9, 3}, 5, 0.0, 1.0, DType::float64);
  const Tensor original = m.clone();
  ddp::orthogonalize_columns(m);
  Tensor gram = zeros({3, 3}, DType::float64);
  ddp::matmul_into(m, true, m, false, gram);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j) REQUIRE(gram.at({i, j}) == Approx(i == j ? 1.0 : 0.0).margin(1e-12));
  // The projection onto the columns keeps the input: m·mᵀ·original == original.
  Tensor coefficients = zeros({3, 3}, DType::float64), back = zeros({9, 3}, DType::float64);
  ddp::matmul_into(m, true, original, false, coefficients);
  ddp::matmul_into(m, false, coefficients, false, back);
  for (int64_t i = 0; i < back.numel(); ++i) REQUIRE(back.item(i) == Approx(original.item(i)).margin(1e-12));
}

TEST_CASE("PowerSGD reproduces a gradient of rank r and averages the vectors exactly",
          "[comm_hook][powersgd]") {
  const int N = world().size(), rank = world().rank();
  // Every rank's matrix is u·v_rᵀ with the same u: the average is rank 1, so rank-1 PowerSGD
  // gives it back (P spans u); the bias is averaged uncompressed.
  ddp::PowerSgdState state(world_ptr(), {.matrix_approximation_rank = 1, .start_powerSGD_iter = 0});
  ddp::GradBucket bucket = make_bucket({{12, 10}, {12}}, DType::float64);
  Tensor matrix = bucket.gradients[0], bias = bucket.gradients[1];
  for (int64_t i = 0; i < 12; ++i) {
    for (int64_t j = 0; j < 10; ++j) matrix.set_item(i * 10 + j, std::cos(0.3 * i) * (j + 1.0 + rank));
    bias.set_item(i, i + 10.0 * rank);
  }
  ddp::powersgd_hook(state, bucket).wait();
  for (int64_t i = 0; i < 12; ++i) {
    for (int64_t j = 0; j < 10; ++j)
      REQUIRE(matrix.item(i * 10 + j) == Approx(std::cos(0.3 * i) * (j + 1.0 + (N - 1) / 2.0)).margin(1e-10));
    REQUIRE(bias.item(i) == Approx(i + 10.0 * (N - 1) / 2.0).margin(1e-12));
  }
  REQUIRE(bucket.bytes_communicated == (12 + 12 + 10) * 8);
  REQUIRE(state.iteration == 1);
  REQUIRE(state.compression_rate() == Approx(132.0 / 34.0));
}

TEST_CASE("PowerSGD error feedback loses nothing: applied + mean error == sum of mean gradients",
          "[comm_hook][powersgd]") {
  const int N = world().size(), rank = world().rank();
  for (bool warm_start : {true, false}) {
    ddp::PowerSgdState state(
        world_ptr(), {.matrix_approximation_rank = 1, .start_powerSGD_iter = 2, .warm_start = warm_start});
    ddp::GradBucket bucket = make_bucket({{8, 6}, {5, 4}, {8}}, DType::float64);
    const int64_t n = bucket.buffer.numel();
    std::vector<double> applied(n, 0.0), true_sum(n, 0.0);
    for (int step = 0; step < 6; ++step) {
      for (int64_t i = 0; i < n; ++i) {
        bucket.buffer.set_item(i, gradient_value(rank, step, i));
        for (int r = 0; r < N; ++r) true_sum[i] += gradient_value(r, step, i) / N;
      }
      ddp::powersgd_hook(state, bucket).wait();
      for (int64_t i = 0; i < n; ++i) applied[i] += bucket.buffer.item(i);
      REQUIRE(same_on_every_rank(bucket.buffer.to_vector()));
    }
    REQUIRE(state.iteration == 6);
    // The error is this rank's; its mean over ranks is what the applied sum still lacks.
    Tensor mean_error = state.errors.at(0).clone();
    world().all_reduce(mean_error, ReduceOp::avg);
    for (int64_t i = 0; i < n; ++i)
      REQUIRE(applied[i] + mean_error.item(i) == Approx(true_sum[i]).margin(1e-10));
    // Rank 1 of 8x6 and 5x4 is lossy: some error must be kept (else the test proves nothing).
    double error_norm = 0;
    for (int64_t i = 0; i < 48; ++i) error_norm += std::fabs(mean_error.item(i));
    REQUIRE(error_norm > 1e-3);
  }
}

TEST_CASE("PowerSGD trains the model about as far as the plain average", "[comm_hook][powersgd]") {
  const TrainResult plain = train(40, nullptr, 0.001);
  auto state = std::make_shared<ddp::PowerSgdState>(
      world_ptr(), ddp::PowerSgdOptions{.matrix_approximation_rank = 2, .start_powerSGD_iter = 5});
  const TrainResult compressed = train(
      40, [state](ddp::DistributedDataParallel& d) { d.register_comm_hook(state, ddp::powersgd_hook); },
      0.001);
  REQUIRE(same_on_every_rank(compressed.parameters));
  REQUIRE(state->iteration == 40);
  INFO("plain loss " << plain.last_loss << ", PowerSGD rank 2 loss " << compressed.last_loss);
  REQUIRE(compressed.last_loss < 1.5 * plain.last_loss);
  REQUIRE(state->compression_rate() > 1.5);
}

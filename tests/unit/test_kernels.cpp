// kernels/ on the CPU: each fast path against a plain loop computed here or in
// linear_reference.cpp, on random inputs of sizes 0, 1, primes and a few hundred.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/adam.h"
#include "kernels/elementwise.h"
#include "kernels/linear.h"
#include "kernels/mse.h"
#include "kernels/reduce_into.h"
#include "kernels/relu.h"
#include "kernels/sgd.h"
#include "tensor/tensor.h"
#include "tests/support/compare.h"

using namespace ringdp;
using namespace ringdp::kernels;

namespace {
uint64_t next_seed() {
  static uint64_t seed = 1000;
  return ++seed;
}
Tensor poisoned(Shape shape, DType dtype) {
  return full(std::move(shape), std::numeric_limits<double>::quiet_NaN(), dtype);
}
}  // namespace

TEST_CASE("linear forward/backward match the plain-loop reference", "[kernels][linear]") {
  const auto dtype = GENERATE(DType::float32, DType::float64);
  const double rtol = dtype == DType::float32 ? 1e-4 : 1e-12;
  const auto dims = GENERATE(table<int64_t, int64_t, int64_t>(
      {{0, 3, 2}, {1, 1, 1}, {3, 0, 2}, {7, 13, 5}, {31, 17, 1}, {64, 300, 129}, {257, 31, 10}}));
  const auto [B, C, OC] = dims;
  CAPTURE(dtype_name(dtype), B, C, OC);
  const Tensor x = randn({B, C}, next_seed(), 0, 1, dtype);
  const Tensor W = randn({OC, C}, next_seed(), 0, 1, dtype);
  const Tensor b = randn({OC}, next_seed(), 0, 1, dtype);
  const Tensor dy = randn({B, OC}, next_seed(), 0, 1, dtype);
  for (bool with_bias : {true, false}) {
    Tensor y = poisoned({B, OC}, dtype), y_ref = poisoned({B, OC}, dtype);
    const void* bias = with_bias ? b.data_ptr() : nullptr;
    linear_forward_cpu(x.data_ptr(), W.data_ptr(), bias, y.data_ptr(), B, C, OC, dtype);
    linear_forward_reference(x.data_ptr(), W.data_ptr(), bias, y_ref.data_ptr(), B, C, OC, dtype);
    RINGDP_REQUIRE_CLOSE(y.to_vector(), y_ref.to_vector(), rtol, rtol);
  }
  Tensor dx = poisoned({B, C}, dtype), dW = poisoned({OC, C}, dtype), db = poisoned({OC}, dtype);
  Tensor dx_ref = poisoned({B, C}, dtype), dW_ref = poisoned({OC, C}, dtype), db_ref = poisoned({OC}, dtype);
  linear_backward_cpu(dy.data_ptr(), x.data_ptr(), W.data_ptr(), dx.data_ptr(), dW.data_ptr(), db.data_ptr(),
                      B, C, OC, dtype);
  linear_backward_reference(dy.data_ptr(), x.data_ptr(), W.data_ptr(), dx_ref.data_ptr(), dW_ref.data_ptr(),
                            db_ref.data_ptr(), B, C, OC, dtype);
  RINGDP_REQUIRE_CLOSE(dx.to_vector(), dx_ref.to_vector(), rtol, rtol);
  RINGDP_REQUIRE_CLOSE(dW.to_vector(), dW_ref.to_vector(), rtol, rtol);
  RINGDP_REQUIRE_CLOSE(db.to_vector(), db_ref.to_vector(), rtol, rtol);
}

TEST_CASE("linear rejects integer dtypes by name", "[kernels][linear][errors]") {
  int32_t x = 1, W = 1, y = 0;
  REQUIRE_THROWS_WITH(linear_forward_cpu(&x, &W, nullptr, &y, 1, 1, 1, DType::int32),
                      Catch::Contains("supports float32 and float64, got int32"));
}

TEST_CASE("mse forward/backward match their formulas, deterministically", "[kernels][mse]") {
  const auto dtype = GENERATE(DType::float32, DType::float64);
  const int64_t n = GENERATE(1, 2, 13, 101, 997);
  const Tensor p = randn({n}, next_seed(), 0, 1, dtype), t = randn({n}, next_seed(), 0, 1, dtype);
  const auto pv = p.to_vector(), tv = t.to_vector();
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += (pv[i] - tv[i]) * (pv[i] - tv[i]);
  for (auto reduction : {Reduction::mean, Reduction::sum}) {
    const double want = reduction == Reduction::mean ? sum / n : sum;
    Tensor loss = poisoned({}, dtype), again = poisoned({}, dtype);
    mse_forward_cpu(p.data_ptr(), t.data_ptr(), loss.data_ptr(), n, dtype, reduction);
    mse_forward_cpu(p.data_ptr(), t.data_ptr(), again.data_ptr(), n, dtype, reduction);
    CHECK(loss.item() == again.item());
    RINGDP_REQUIRE_CLOSE(loss.to_vector(), std::vector<double>{want}, 1e-6, 0);
    const Tensor dloss = full({}, 0.5, dtype);
    Tensor d = poisoned({n}, dtype);
    mse_backward_cpu(p.data_ptr(), t.data_ptr(), dloss.data_ptr(), d.data_ptr(), n, dtype, reduction);
    std::vector<double> dwant(n);
    for (int64_t i = 0; i < n; ++i)
      dwant[i] = 0.5 * 2 * (pv[i] - tv[i]) / (reduction == Reduction::mean ? n : 1);
    RINGDP_REQUIRE_CLOSE(d.to_vector(), dwant, 1e-6, 1e-7);
  }
}

TEST_CASE("relu forward and backward", "[kernels][relu]") {
  const Tensor x = from_vector({-2, -0.0, 0.0, 0.5, 3}, {5}, DType::float32);
  const Tensor dy = from_vector({1, 2, 3, 4, 5}, {5}, DType::float32);
  Tensor y = poisoned({5}, DType::float32), dx = poisoned({5}, DType::float32);
  relu_forward_cpu(x.data_ptr(), y.data_ptr(), 5, DType::float32);
  relu_backward_cpu(x.data_ptr(), dy.data_ptr(), dx.data_ptr(), 5, DType::float32);
  CHECK(y.to_vector() == std::vector<double>{0, 0, 0, 0.5, 3});
  CHECK(dx.to_vector() == std::vector<double>{0, 0, 0, 4, 5});
}

TEST_CASE("sgd step follows PyTorch's update rule", "[kernels][sgd]") {
  // One parameter, hand-computed: wd 0.1, momentum 0.9, lr 0.5, grads 1.0 then 2.0, p0 = 1.
  // step 1: g = 1 + 0.1·1 = 1.1; buf = 1.1; p = 1 − 0.55 = 0.45
  // step 2: g = 2 + 0.045 = 2.045; buf = 0.99 + 2.045 = 3.035; p = 0.45 − 1.5175 = −1.0675
  // nesterov step 1: g = 1.1 + 0.9·1.1 = 2.09; p = 1 − 1.045 = −0.045
  double p = 1.0, buf = 0.0, g1 = 1.0, g2 = 2.0;
  SgdStep step{.lr = 0.5, .momentum = 0.9, .dampening = 0.0, .weight_decay = 0.1};
  sgd_step_cpu(&p, &g1, &buf, 1, DType::float64, step);
  CHECK(p == Approx(0.45).epsilon(1e-15));
  step.first_step = false;
  sgd_step_cpu(&p, &g2, &buf, 1, DType::float64, step);
  CHECK(buf == Approx(3.035).epsilon(1e-14));
  CHECK(p == Approx(-1.0675).epsilon(1e-14));
  double q = 1.0, qbuf = 0;
  SgdStep nesterov = step;
  nesterov.first_step = true;
  nesterov.nesterov = true;
  sgd_step_cpu(&q, &g1, &qbuf, 1, DType::float64, nesterov);
  CHECK(q == Approx(-0.045).epsilon(1e-14));
  float plain = 2.0f, grad = 4.0f;
  sgd_step_cpu(&plain, &grad, nullptr, 1, DType::float32, SgdStep{.lr = 0.25});
  CHECK(plain == 1.0f);
}

TEST_CASE("adam step follows PyTorch's update rule", "[kernels][adam]") {
  // lr 0.1, betas (0.9, 0.999), eps 1e-8, p0 = 1, grads 2 then -1, by hand:
  // step 1: m = 0.2, v = 0.004, bias corrections 0.1 and 0.001: denom = sqrt(0.004)/sqrt(0.001) + eps
  //         = 2 + eps; p = 1 − (0.1/0.1)·0.2/(2 + eps)
  // step 2: m = 0.18 − 0.1 = 0.08, v = 0.003996 + 0.001 = 0.004996; bias corrections 0.19 and
  //         0.001999; p −= (0.1/0.19)·0.08/(sqrt(0.004996)/sqrt(0.001999) + eps)
  const double eps = 1e-8;
  double p = 1.0, m = 0, v = 0, g1 = 2.0, g2 = -1.0;
  AdamStep step{.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = eps, .step = 1};
  adam_step_cpu(&p, &g1, &m, &v, 1, DType::float64, step);
  const double p1 = 1.0 - 0.2 / (2.0 + eps);
  CHECK(p == Approx(p1).epsilon(1e-14));
  step.step = 2;
  adam_step_cpu(&p, &g2, &m, &v, 1, DType::float64, step);
  CHECK(m == Approx(0.08).epsilon(1e-14));
  CHECK(v == Approx(0.004996).epsilon(1e-13));
  CHECK(p ==
        Approx(p1 - (0.1 / 0.19) * 0.08 / (std::sqrt(0.004996) / std::sqrt(0.001999) + eps)).epsilon(1e-13));
  // Weight decay 0.5 at step 1: Adam folds it into g (2 + 0.5·1 = 2.5, so the step is lr·2.5/(2.5 + eps));
  // AdamW shrinks p to 1 − 0.1·0.5 = 0.95 first, then steps with the bare gradient.
  double adam = 1.0, adamw = 1.0, ma = 0, va = 0, mw = 0, vw = 0;
  step = AdamStep{.lr = 0.1, .eps = eps, .weight_decay = 0.5, .step = 1};
  adam_step_cpu(&adam, &g1, &ma, &va, 1, DType::float64, step);
  CHECK(adam == Approx(1.0 - 0.1 * 2.5 / (2.5 + eps)).epsilon(1e-14));
  step.decoupled = true;
  adam_step_cpu(&adamw, &g1, &mw, &vw, 1, DType::float64, step);
  CHECK(adamw == Approx(0.95 - 0.1 * 2.0 / (2.0 + eps)).epsilon(1e-14));
  // float32 runs the same rule; a zero gradient on a zero parameter (ZeRO's padding) stays zero.
  float zero = 0.0f, zero_grad = 0.0f, zm = 0.0f, zv = 0.0f;
  adam_step_cpu(&zero, &zero_grad, &zm, &zv, 1, DType::float32, AdamStep{.weight_decay = 0.1, .step = 1});
  CHECK(zero == 0.0f);
  REQUIRE_THROWS_WITH(adam_step_cpu(&p, &g1, &m, &v, 1, DType::float64, AdamStep{.step = 0}),
                      Catch::Matchers::Contains("step number 0 must be at least 1"));
}

namespace {
double reference_combine(double a, double b, ReduceOp op) {
  switch (op) {
    case ReduceOp::prod: return a * b;
    case ReduceOp::min: return std::min(a, b);
    case ReduceOp::max: return std::max(a, b);
    case ReduceOp::band: return static_cast<double>(static_cast<int64_t>(a) & static_cast<int64_t>(b));
    case ReduceOp::bor: return static_cast<double>(static_cast<int64_t>(a) | static_cast<int64_t>(b));
    case ReduceOp::bxor: return static_cast<double>(static_cast<int64_t>(a) ^ static_cast<int64_t>(b));
    default: return a + b;
  }
}
}  // namespace

TEST_CASE("reduce_into: every dtype and op against a double-precision loop", "[kernels][reduce]") {
  const auto dtype = GENERATE(DType::float32, DType::float64, DType::int32, DType::int64, DType::bfloat16,
                              DType::float16, DType::int8, DType::uint8);
  const auto op = GENERATE(ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg,
                           ReduceOp::band, ReduceOp::bor, ReduceOp::bxor);
  const int64_t n = GENERATE(0, 1, 7, 31, 1031);
  if (is_bitwise(op) && is_floating(dtype)) return;  // refused: the next test case
  CAPTURE(dtype_name(dtype), reduce_op_name(op), n);
  // Small integers: every result is exact in every dtype, including bfloat16 (< 256) and int8
  // (|a·b| ≤ 56); uint8 takes them shifted to be non-negative.
  const double shift = dtype == DType::uint8 ? 4 : 0;
  Tensor dst = empty({n}, dtype), src = empty({n}, dtype);
  std::vector<double> want(n);
  for (int64_t i = 0; i < n; ++i) {
    const double a = static_cast<double>(i % 13) - 4 + shift,
                 b = static_cast<double>((i * 7) % 11) - 3 + shift;
    dst.set_item(i, a);
    src.set_item(i, b);
    want[i] = reference_combine(a, b, op);
  }
  reduce_into_cpu(dst.data_ptr(), src.data_ptr(), n, dtype, op);
  CHECK(dst.to_vector() == want);
}

TEST_CASE("bool reduces as any (sum, max, bor), all (prod, min, band) and xor, writing 0 or 1",
          "[kernels][reduce]") {
  // Bytes a C++ bool may not hold (2, 255) are true: a corrupt byte is a wrong value, never UB.
  const uint8_t bytes[] = {0, 1, 2, 255};
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::band,
                      ReduceOp::bor, ReduceOp::bxor})
    for (uint8_t a : bytes)
      for (uint8_t b : bytes) {
        CAPTURE(reduce_op_name(op), int(a), int(b));
        const bool x = a != 0, y = b != 0;
        const bool any = op == ReduceOp::sum || op == ReduceOp::max || op == ReduceOp::bor;
        const int want = op == ReduceOp::bxor ? x != y : any ? (x || y) : (x && y);
        uint8_t dst = a;
        reduce_into_cpu(&dst, &b, 1, DType::boolean, op);
        CHECK(int(dst) == want);
      }
  uint8_t a = 1, b = 1;
  REQUIRE_THROWS_WITH(reduce_into_cpu(&a, &b, 1, DType::boolean, ReduceOp::avg),
                      Catch::Contains("avg is not defined on bool"));
}

TEST_CASE("int8 and uint8 wrap around as int32 does", "[kernels][reduce]") {
  int8_t a = 127, b = 1;
  reduce_into_cpu(&a, &b, 1, DType::int8, ReduceOp::sum);
  CHECK(a == -128);
  uint8_t c = 200, d = 100;
  reduce_into_cpu(&c, &d, 1, DType::uint8, ReduceOp::sum);
  CHECK(c == 44);
  uint8_t e = 16, f = 17;
  reduce_into_cpu(&e, &f, 1, DType::uint8, ReduceOp::prod);
  CHECK(e == (16 * 17) % 256);
}

TEST_CASE("bitwise ops on a floating dtype are refused by the kernel too", "[kernels][reduce]") {
  float a = 1, b = 2;
  for (ReduceOp op : {ReduceOp::band, ReduceOp::bor, ReduceOp::bxor})
    REQUIRE_THROWS_WITH(reduce_into_cpu(&a, &b, 1, DType::float32, op),
                        Catch::StartsWith(std::string("reduce op ") + reduce_op_name(op) +
                                          " is defined on integer dtypes only"));
}

TEST_CASE("reduce_into on integers wraps instead of overflowing", "[kernels][reduce]") {
  int32_t a = std::numeric_limits<int32_t>::max(), b = 1;
  reduce_into_cpu(&a, &b, 1, DType::int32, ReduceOp::sum);
  CHECK(a == std::numeric_limits<int32_t>::min());
}

namespace {
// a + b through reduce_into_cpu, as T stores it.
template <typename T>
float sum_of(float a, float b) {
  T x(a), y(b);
  reduce_into_cpu(&x, &y, 1, DTypeOf<T>::value, ReduceOp::sum);
  return static_cast<float>(x);
}
}  // namespace

TEST_CASE("16-bit float sums accumulate in float32 and round to nearest even", "[kernels][reduce]") {
  // bfloat16 keeps 8 significant bits, float16 11: the first odd integer each cannot hold.
  CHECK(sum_of<bfloat16>(256, 1) == 256);  // 257 ties to even
  CHECK(sum_of<bfloat16>(256, 3) == 260);  // 259 ties to 260 (even mantissa)
  CHECK(sum_of<float16>(2048, 1) == 2048);  // 2049 ties to even
  CHECK(sum_of<float16>(2048, 3) == 2052);  // 2051 ties to 2052
  CHECK(std::isinf(sum_of<float16>(65504, 32)));  // 65536 is past the largest finite half
}

TEST_CASE("elementwise: fill, cast, scale, add", "[kernels][elementwise]") {
  const int64_t n = GENERATE(0, 1, 129);
  for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64, DType::bfloat16}) {
    Tensor a = arange(n, dtype), b = full({n}, 2.0, dtype);
    Tensor out = poisoned({n}, DType::float64).to(dtype);
    add_cpu(a.data_ptr(), b.data_ptr(), out.data_ptr(), n, dtype, 3.0);
    scale_cpu(out.data_ptr(), n, dtype, 0.5);
    std::vector<double> want(n);
    for (int64_t i = 0; i < n; ++i) {
      want[i] = (static_cast<double>(i) + 6.0) * 0.5;
      if (dtype == DType::int32 || dtype == DType::int64) want[i] = std::trunc(want[i]);
      if (dtype == DType::bfloat16) want[i] = static_cast<float>(bfloat16(static_cast<float>(want[i])));
    }
    if (dtype == DType::bfloat16) {
      // arange itself rounds above 256, and each step rounds: compare loosely.
      RINGDP_REQUIRE_CLOSE(out.to_vector(), want, 1.0 / 64, 0);
    } else {
      CHECK(out.to_vector() == want);
    }
  }
}

TEST_CASE("elementwise on the 8-bit types and float16: fill, cast, scale, add", "[kernels][elementwise]") {
  const int64_t n = GENERATE(0, 1, 50);
  for (DType dtype : {DType::float16, DType::int8, DType::uint8}) {
    CAPTURE(dtype_name(dtype), n);
    Tensor a = arange(n, dtype), b = full({n}, 2.0, dtype);
    Tensor out = poisoned({n}, DType::float64).to(dtype);
    add_cpu(a.data_ptr(), b.data_ptr(), out.data_ptr(), n, dtype, 3.0);
    scale_cpu(out.data_ptr(), n, dtype, 0.5);
    std::vector<double> want(n);
    // (i + 6) / 2 ≤ 28: exact in float16, truncated toward zero in the integers.
    for (int64_t i = 0; i < n; ++i)
      want[i] = is_floating(dtype) ? (static_cast<double>(i) + 6.0) * 0.5
                                   : std::trunc((static_cast<double>(i) + 6.0) * 0.5);
    CHECK(out.to_vector() == want);
  }
  // bool: nonzero is true, and what is written is 0 or 1.
  Tensor flags = arange(5, DType::float32).to(DType::boolean);
  CHECK(flags.to_vector() == std::vector<double>{0, 1, 1, 1, 1});
  Tensor negative = full({2}, -0.5, DType::float64).to(DType::boolean);
  CHECK(negative.to_vector() == std::vector<double>{1, 1});
  CHECK(*static_cast<const uint8_t*>(negative.data_ptr()) == 1);
}

TEST_CASE("reduce_into ops are commutative bit for bit, signed zeros and NaN included", "[kernels][reduce]") {
  const float values[] = {0.0f,
                          -0.0f,
                          1.5f,
                          -2.25f,
                          std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()};
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
    for (float a : values) {
      for (float b : values) {
        float ab = a, ba = b;
        reduce_into_cpu(&ab, &b, 1, DType::float32, op);
        reduce_into_cpu(&ba, &a, 1, DType::float32, op);
        uint32_t bits_ab, bits_ba;
        std::memcpy(&bits_ab, &ab, 4);
        std::memcpy(&bits_ba, &ba, 4);
        INFO(reduce_op_name(op) << "(" << a << ", " << b << ")");
        CHECK((bits_ab == bits_ba ||
               (std::isnan(ab) && std::isnan(ba) && op != ReduceOp::min && op != ReduceOp::max)));
      }
    }
  }
  float lo = 0.0f, negative_zero = -0.0f;
  reduce_into_cpu(&lo, &negative_zero, 1, DType::float32, ReduceOp::min);
  CHECK(std::signbit(lo));
}

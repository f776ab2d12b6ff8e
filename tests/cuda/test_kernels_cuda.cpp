// The cuda suite: every CUDA kernel against its CPU twin, and autograd + SGD on cuda:0 against
// the same run on the CPU. Random inputs drawn fresh each run; outputs poisoned with NaN before
// each run and checked fully written; sentinels after each output checked untouched; float32
// compared with a float64 CPU result. Without a CUDA device the binary prints
// "SKIPPED: no CUDA device" and exits 77, which meson counts as skipped.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "autograd/layers.h"
#include "autograd/optim/sgd.h"
#include "kernels/adam.h"
#include "kernels/device_memory.h"
#include "kernels/elementwise.h"
#include "kernels/linear.h"
#include "kernels/mse.h"
#include "kernels/reduce_into.h"
#include "kernels/relu.h"
#include "kernels/sgd.h"
#include "tensor/ops.h"
#include "tests/support/catch_session.h"

using namespace ringdp;
using namespace ringdp::kernels;

namespace {

const uint64_t kRunSeed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
uint64_t fresh_seed() {
  static uint64_t n = 0;
  return kRunSeed * 1000003ull + ++n;
}

constexpr int64_t kPad = 64;  // sentinel elements after every output
// The emulator (tests/emu) runs every thread of a grid on one core, under ASan in CI: it skips the
// sizes that only a GPU runs cheaply. They reach no path the smaller ones miss there: a grid is
// capped at 65535 x 8 blocks (kernels/cuda/cuda_check.h), so even 2^20 elements take one stride,
// and 129 rows already end in a partial tile. MSE's reduction strides from 2^18 elements.
#ifdef RINGDP_TEST_EMULATED
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif
constexpr float kSentinel = 12345.678f;

// A device buffer of n elements plus kPad sentinels, the n poisoned with NaN.
struct DeviceBuffer {
  Tensor storage;
  int64_t n;
  double sentinel;  // kSentinel as the dtype stores it
  DeviceBuffer(int64_t count, DType dtype) : n(count) {
    Tensor host = full({count + kPad}, std::numeric_limits<double>::quiet_NaN(), dtype);
    for (int64_t i = count; i < count + kPad; ++i) host.set_item(i, kSentinel);
    sentinel = host.item(count);
    storage = host.to(Device::cuda(0));
  }
  void* data() { return storage.data_ptr(); }
  std::vector<double> values() const {
    auto all = storage.to_vector();
    return {all.begin(), all.begin() + n};
  }
  bool sentinels_intact() const {
    const auto all = storage.to_vector();
    for (int64_t i = n; i < n + kPad; ++i)
      if (all[i] != sentinel) return false;
    return true;
  }
};

Tensor on_gpu(const Tensor& t) { return t.to(Device::cuda(0)); }

// rows x 1 with x[r] = r % 1024: exact in every float dtype, and 2x + 0.5 too.
Tensor arange_like_rows(int64_t rows, DType dtype) {
  Tensor t = zeros({rows, 1}, DType::float64);
  for (int64_t r = 0; r < rows; ++r) t.data<double>()[r] = static_cast<double>(r % 1024);
  return t.to(dtype);
}

// |got − want| ≤ rtol · scale[i] for every element, where scale is |want| or a sum of |terms|.
int64_t mismatches(const std::vector<double>& got, const std::vector<double>& want,
                   const std::vector<double>& scale, double rtol, const char* what) {
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::isfinite(got[i]) && std::fabs(got[i] - want[i]) <= rtol * std::max(scale[i], 1e-30);
    if (!ok && bad++ < 5) UNSCOPED_INFO(what << "[" << i << "]: got " << got[i] << ", want " << want[i]);
  }
  return bad;
}

}  // namespace

TEST_CASE("linear forward and backward match the float64 CPU result", "[cuda][linear]") {
  const int64_t sizes[] = {1, 7, 33, 127, 129, 1000};
  for (DType dtype : {DType::float32, DType::float64}) {
    const double rtol = dtype == DType::float32 ? 1e-5 : 1e-12;
    for (int64_t B : sizes) {
      if (kEmulated && B > 129) continue;
      for (int64_t C : {int64_t{1}, int64_t{33}, int64_t{129}}) {
        // Emulated, 257 output columns stand for 1000: more than one 128-wide tile, the last
        // partial, and (as K of dx's GEMM) a partial step of 8.
        for (int64_t OC : {int64_t{7}, int64_t{128}, kEmulated ? int64_t{257} : int64_t{1000}}) {
          CAPTURE(dtype_name(dtype), B, C, OC);
          const Tensor x = randn({B, C}, fresh_seed(), 0, 1, dtype),
                       W = randn({OC, C}, fresh_seed(), 0, 1, dtype);
          const Tensor b = randn({OC}, fresh_seed(), 0, 1, dtype),
                       dy = randn({B, OC}, fresh_seed(), 0, 1, dtype);
          // float64 references and the sums of |terms| that bound the rounding error.
          const Tensor x64 = x.to(DType::float64), W64 = W.to(DType::float64), b64 = b.to(DType::float64),
                       dy64 = dy.to(DType::float64);
          std::vector<double> y_ref(B * OC), y_scale(B * OC), dx_ref(B * C), dx_scale(B * C), dW_ref(OC * C),
              dW_scale(OC * C), db_ref(OC), db_scale(OC);
          linear_forward_reference(x64.data_ptr(), W64.data_ptr(), b64.data_ptr(), y_ref.data(), B, C, OC,
                                   DType::float64);
          linear_backward_reference(dy64.data_ptr(), x64.data_ptr(), W64.data_ptr(), dx_ref.data(),
                                    dW_ref.data(), db_ref.data(), B, C, OC, DType::float64);
          {
            Tensor ax = x64.clone(), aW = W64.clone(), ab = b64.clone(), ady = dy64.clone();
            for (Tensor* t : {&ax, &aW, &ab, &ady})
              for (int64_t i = 0; i < t->numel(); ++i) t->set_item(i, std::fabs(t->item(i)));
            linear_forward_reference(ax.data_ptr(), aW.data_ptr(), ab.data_ptr(), y_scale.data(), B, C, OC,
                                     DType::float64);
            linear_backward_reference(ady.data_ptr(), ax.data_ptr(), aW.data_ptr(), dx_scale.data(),
                                      dW_scale.data(), db_scale.data(), B, C, OC, DType::float64);
          }
          DeviceBuffer y(B * OC, dtype), dx(B * C, dtype), dW(OC * C, dtype), db(OC, dtype);
          const Tensor gx = on_gpu(x), gW = on_gpu(W), gb = on_gpu(b), gdy = on_gpu(dy);
          linear_forward_cuda(gx.data_ptr(), gW.data_ptr(), gb.data_ptr(), y.data(), B, C, OC, dtype);
          linear_backward_cuda(gdy.data_ptr(), gx.data_ptr(), gW.data_ptr(), dx.data(), dW.data(), db.data(),
                               B, C, OC, dtype);
          CHECK(mismatches(y.values(), y_ref, y_scale, rtol, "y") == 0);
          CHECK(mismatches(dx.values(), dx_ref, dx_scale, rtol, "dx") == 0);
          CHECK(mismatches(dW.values(), dW_ref, dW_scale, rtol, "dW") == 0);
          CHECK(mismatches(db.values(), db_ref, db_scale, rtol, "db") == 0);
          CHECK(y.sentinels_intact());
          CHECK(dx.sentinels_intact());
          CHECK(dW.sentinels_intact());
          CHECK(db.sentinels_intact());
        }
      }
    }
  }
}

TEST_CASE("a 4096x4096x4096 GEMM matches on sampled outputs", "[cuda][linear][large]") {
  const int64_t n = 4096;
  const Tensor x = randn({n, n}, fresh_seed()), W = randn({n, n}, fresh_seed());
  DeviceBuffer y(n * n, DType::float32);
  const Tensor gx = on_gpu(x), gW = on_gpu(W);
  linear_forward_cuda(gx.data_ptr(), gW.data_ptr(), nullptr, y.data(), n, n, n, DType::float32);
  const auto got = y.values();
  CHECK(y.sentinels_intact());
  int64_t unwritten = 0;
  for (double v : got) unwritten += std::isnan(v);
  CHECK(unwritten == 0);
  std::mt19937_64 pick(fresh_seed());
  int64_t bad = 0;
  for (int s = 0; s < 2000; ++s) {
    const int64_t m = pick() % n, o = pick() % n;
    double want = 0, scale = 0;
    for (int64_t k = 0; k < n; ++k) {
      const double term = static_cast<double>(x.data<float>()[m * n + k]) * W.data<float>()[o * n + k];
      want += term;
      scale += std::fabs(term);
    }
    if (std::fabs(got[m * n + o] - want) > 1e-5 * scale && bad++ < 5)
      UNSCOPED_INFO("y[" << m << "," << o << "] " << got[m * n + o] << " vs " << want);
  }
  CHECK(bad == 0);
}

TEST_CASE("a batch of more rows than gridDim.y can tile runs whole", "[cuda][linear][large]") {
  // 65535 row tiles was the old limit (rows on gridDim.y): one more, float32 (128-row tiles) and
  // float64 (16-row tiles); y = 2x + 0.5 checked on every row, so no tile is missed.
  for (auto [dtype, rows] :
       {std::pair{DType::float32, 65535LL * 128 + 1}, std::pair{DType::float64, 65535LL * 16 + 1}}) {
    CAPTURE(dtype_name(dtype), rows);
    const Tensor x = arange_like_rows(rows, dtype);
    const Tensor W = full({1, 1}, 2.0, dtype), b = full({1}, 0.5, dtype);
    DeviceBuffer y(rows, dtype);
    const Tensor gx = on_gpu(x), gW = on_gpu(W), gb = on_gpu(b);
    linear_forward_cuda(gx.data_ptr(), gW.data_ptr(), gb.data_ptr(), y.data(), rows, 1, 1, dtype);
    const auto got = y.values();
    CHECK(y.sentinels_intact());
    int64_t bad = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const double want = 2.0 * static_cast<double>(r % 1024) + 0.5;
      if (got[r] != want && bad++ < 5) UNSCOPED_INFO("y[" << r << "] = " << got[r] << ", want " << want);
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("mse forward is deterministic and matches; backward matches", "[cuda][mse]") {
  for (DType dtype : {DType::float32, DType::float64}) {
    // The largest makes level 1's capped grid (1024 blocks of 256) stride: twice, and a part, on
    // the emulator.
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{33}, int64_t{127}, int64_t{129}, int64_t{1000},
                      kEmulated ? (int64_t{1} << 19) + 129 : int64_t{1} << 22}) {
      CAPTURE(dtype_name(dtype), n);
      const Tensor p = randn({n}, fresh_seed(), 0, 1, dtype), t = randn({n}, fresh_seed(), 0, 1, dtype);
      const Tensor gp = on_gpu(p), gt = on_gpu(t);
      for (Reduction reduction : {Reduction::mean, Reduction::sum}) {
        // The emulator runs the capped grid's 2^18 threads one after another whatever n is (the
        // largest size took 107 s of ASan's pass): there one reduction per dtype at that size,
        // since level 1, which strides, is the same code for both.
        if (kEmulated && n > 1000 &&
            reduction != (dtype == DType::float32 ? Reduction::mean : Reduction::sum))
          continue;
        double want = 0;
        const auto pv = p.to_vector(), tv = t.to_vector();
        for (int64_t i = 0; i < n; ++i) want += (pv[i] - tv[i]) * (pv[i] - tv[i]);
        if (reduction == Reduction::mean) want /= n;
        DeviceBuffer loss(1, dtype), again(1, dtype);
        mse_forward_cuda(gp.data_ptr(), gt.data_ptr(), loss.data(), n, dtype, reduction);
        mse_forward_cuda(gp.data_ptr(), gt.data_ptr(), again.data(), n, dtype, reduction);
        const double a = loss.values()[0], b = again.values()[0];
        CHECK(std::memcmp(&a, &b, sizeof a) == 0);
        CHECK(std::fabs(a - want) <= 1e-5 * want);
        CHECK(loss.sentinels_intact());
        const Tensor dloss = on_gpu(full({1}, 0.75, dtype));
        DeviceBuffer d(n, dtype);
        mse_backward_cuda(gp.data_ptr(), gt.data_ptr(), dloss.data_ptr(), d.data(), n, dtype, reduction);
        std::vector<double> dwant(n), scale(n);
        for (int64_t i = 0; i < n; ++i) {
          dwant[i] = 0.75 * 2 * (pv[i] - tv[i]) / (reduction == Reduction::mean ? n : 1);
          scale[i] = std::fabs(dwant[i]) + 1e-30;
        }
        CHECK(mismatches(d.values(), dwant, scale, 1e-5, "dpred") == 0);
        CHECK(d.sentinels_intact());
      }
    }
  }
}

TEST_CASE("relu, sgd, scale, add, fill and cast match their CPU twins", "[cuda][elementwise]") {
  for (int64_t n : {1, 7, 33, 127, 129, 1000}) {
    const Tensor x = randn({n}, fresh_seed(), 0, 1, DType::float32),
                 dy = randn({n}, fresh_seed(), 0, 1, DType::float32);
    const Tensor gx = on_gpu(x), gdy = on_gpu(dy);
    Tensor y_ref = empty({n}), dx_ref = empty({n});
    relu_forward_cpu(x.data_ptr(), y_ref.data_ptr(), n, DType::float32);
    relu_backward_cpu(x.data_ptr(), dy.data_ptr(), dx_ref.data_ptr(), n, DType::float32);
    DeviceBuffer y(n, DType::float32), dx(n, DType::float32);
    relu_forward_cuda(gx.data_ptr(), y.data(), n, DType::float32);
    relu_backward_cuda(gx.data_ptr(), gdy.data_ptr(), dx.data(), n, DType::float32);
    CHECK(y.values() == y_ref.to_vector());
    CHECK(dx.values() == dx_ref.to_vector());
    CHECK((y.sentinels_intact() && dx.sentinels_intact()));
    // SGD with momentum, weight decay and nesterov, two steps, against the CPU twin.
    for (bool nesterov : {false, true}) {
      Tensor p = randn({n}, fresh_seed(), 0, 1, DType::float64),
             g = randn({n}, fresh_seed(), 0, 1, DType::float64);
      Tensor buf = zeros({n}, DType::float64);
      Tensor gp = on_gpu(p), gg = on_gpu(g), gbuf = on_gpu(buf);
      SgdStep step{.lr = 0.1, .momentum = 0.9, .dampening = 0, .weight_decay = 0.01, .nesterov = nesterov};
      for (int k = 0; k < 2; ++k) {
        step.first_step = k == 0;
        sgd_step_cpu(p.data_ptr(), g.data_ptr(), buf.data_ptr(), n, DType::float64, step);
        sgd_step_cuda(gp.data_ptr(), gg.data_ptr(), gbuf.data_ptr(), n, DType::float64, step);
      }
      std::vector<double> scale(n, 1.0);
      CHECK(mismatches(gp.to_vector(), p.to_vector(), scale, 1e-12, "sgd param") == 0);
    }
    for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64, DType::bfloat16,
                        DType::float16, DType::int8, DType::uint8, DType::boolean}) {
      CAPTURE(dtype_name(dtype), n);
      // The one-byte types take values that fit them (a cast out of range is undefined).
      Tensor a = dtype_size(dtype) == 1 ? rand({n}, fresh_seed(), 0, 50, DType::float64).to(dtype)
                                        : arange(n, dtype),
             b = full({n}, 3.0, dtype);
      Tensor want = a.clone();
      add_cpu(a.data_ptr(), b.data_ptr(), want.data_ptr(), n, dtype, 2.0);
      scale_cpu(want.data_ptr(), n, dtype, 0.5);
      Tensor ga = on_gpu(a), gb = on_gpu(b);
      DeviceBuffer got(n, dtype);
      add_cuda(ga.data_ptr(), gb.data_ptr(), got.data(), n, dtype, 2.0);
      scale_cuda(got.data(), n, dtype, 0.5);
      CHECK(got.values() == want.to_vector());
      CHECK(got.sentinels_intact());
    }
  }
}

TEST_CASE("reduce_into matches the CPU twin for every dtype and op", "[cuda][reduce]") {
  for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64, DType::bfloat16,
                      DType::float16, DType::int8, DType::uint8, DType::boolean}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg,
                        ReduceOp::band, ReduceOp::bor, ReduceOp::bxor}) {
      if (is_bitwise(op) && is_floating(dtype)) {
        DeviceBuffer x(4, dtype), y(4, dtype);
        REQUIRE_THROWS_WITH(reduce_into_cuda(x.data(), y.data(), 4, dtype, op),
                            Catch::Contains("is defined on integer dtypes only"));
        continue;
      }
      if (dtype == DType::boolean && op == ReduceOp::avg) {
        DeviceBuffer x(4, dtype), y(4, dtype);
        REQUIRE_THROWS_WITH(reduce_into_cuda(x.data(), y.data(), 4, dtype, op),
                            Catch::Contains("avg is not defined on bool"));
        continue;
      }
      // The 8-bit types over their whole range (uint8 crossing 128, where a signed compare would
      // go wrong), bool as 0 and 1 in equal parts (so any and all differ), the rest in [-8, 8).
      const auto inputs = [&](int64_t n) {
        if (dtype == DType::uint8) return rand({n}, fresh_seed(), 0, 256, DType::float64).to(dtype);
        if (dtype == DType::int8) return rand({n}, fresh_seed(), -128, 128, DType::float64).to(dtype);
        if (dtype == DType::boolean)
          return rand({n}, fresh_seed(), 0, 2, DType::float64).to(DType::int32).to(dtype);
        return rand({n}, fresh_seed(), -8, 8, DType::float64).to(dtype);
      };
      for (int64_t n : {1, 7, 33, 127, 129, 1000, 1 << 20}) {
        if (kEmulated && n > 1000) continue;
        CAPTURE(dtype_name(dtype), reduce_op_name(op), n);
        Tensor dst = inputs(n), src = inputs(n);
        Tensor want = dst.clone();
        reduce_into_cpu(want.data_ptr(), src.data_ptr(), n, dtype, op);
        DeviceBuffer got(n, dtype);
        cuda_memcpy(got.data(), on_gpu(dst).data_ptr(), dst.nbytes(), CopyKind::device_to_device);
        const Tensor gsrc = on_gpu(src);
        reduce_into_cuda(got.data(), gsrc.data_ptr(), n, dtype, op);
        CHECK(got.values() == want.to_vector());
        CHECK(got.sentinels_intact());
      }
    }
  }
}

TEST_CASE("adam and adamw steps match their CPU twin", "[cuda][adam]") {
  // Three steps, weight decay on, both dtypes: the same per-element arithmetic in the same order on
  // both sides, so float64 agrees to rounding and float32 to a few ulps of the parameter.
  for (int64_t n : {1, 7, 33, 127, 129, 1000}) {
    for (DType dtype : {DType::float32, DType::float64}) {
      for (bool decoupled : {false, true}) {
        CAPTURE(n, dtype_name(dtype), decoupled);
        Tensor p = randn({n}, fresh_seed(), 0, 1, dtype), m = zeros({n}, dtype), v = zeros({n}, dtype);
        Tensor gp = on_gpu(p), gm = on_gpu(m), gv = on_gpu(v);
        AdamStep step{.lr = 0.01,
                      .beta1 = 0.9,
                      .beta2 = 0.999,
                      .eps = 1e-8,
                      .weight_decay = 0.05,
                      .decoupled = decoupled};
        for (int64_t t = 1; t <= 3; ++t) {
          const Tensor g = randn({n}, fresh_seed(), 0, 1, dtype), gg = on_gpu(g);
          step.step = t;
          adam_step_cpu(p.data_ptr(), g.data_ptr(), m.data_ptr(), v.data_ptr(), n, dtype, step);
          adam_step_cuda(gp.data_ptr(), gg.data_ptr(), gm.data_ptr(), gv.data_ptr(), n, dtype, step);
        }
        const double rtol = dtype == DType::float32 ? 1e-6 : 1e-14;
        const std::vector<double> scale(n, 1.0);
        CHECK(mismatches(gp.to_vector(), p.to_vector(), scale, rtol, "adam param") == 0);
        CHECK(mismatches(gm.to_vector(), m.to_vector(), scale, rtol, "adam exp_avg") == 0);
        CHECK(mismatches(gv.to_vector(), v.to_vector(), scale, rtol, "adam exp_avg_sq") == 0);
      }
    }
  }
}

TEST_CASE("autograd and SGD on cuda:0 give the CPU's parameters", "[cuda][autograd]") {
  using namespace ringdp::autograd;
  auto make = [](Device device) {
    return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
        std::make_shared<Linear>(LinearOptions(10, 33).device(device), 1), std::make_shared<ReLU>(),
        std::make_shared<Linear>(LinearOptions(33, 1).device(device), 2)});
  };
  auto cpu = make(Device::cpu()), gpu = make(Device::cuda(0));
  optim::SGD cpu_sgd(cpu->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  optim::SGD gpu_sgd(gpu->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  const Tensor x = randn({129, 10}, 5), y = randn({129, 1}, 6);
  const Tensor gx = on_gpu(x), gy = on_gpu(y);
  for (int step = 0; step < 5; ++step) {
    cpu_sgd.zero_grad();
    gpu_sgd.zero_grad();
    mse_loss((*cpu)(x), y).backward();
    mse_loss((*gpu)(gx), gy).backward();
    cpu_sgd.step();
    gpu_sgd.step();
  }
  const auto cp = cpu->parameters(), gp = gpu->parameters();
  for (size_t i = 0; i < cp.size(); ++i) {
    const auto a = cp[i].to_vector(), b = gp[i].to_vector();
    std::vector<double> scale(a.size(), 1.0);
    CHECK(mismatches(b, a, scale, 1e-4, "parameter") == 0);
  }
}

int main(int argc, char** argv) {
  if (const int rc = ringdp::testing::catch_parse(argc, argv)) return rc;
  // Listing needs no device: tests/gpu/device_check.sh checks its filters select something first.
  if (!ringdp::testing::catch_listing_only() && cuda_device_count() == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return 77;
  }
  return ringdp::testing::catch_run();
}

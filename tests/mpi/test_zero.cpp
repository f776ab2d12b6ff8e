// ZeroRedundancyOptimizer against plain DDP + the same optimizer: from the same initial parameters
// and the same data, N ranks end with the same parameters (within float tolerance) and the same
// optimizer state once consolidated, while each rank holds ceil(P/N) elements of each state. Run
// under mpirun with 1-4 ranks; the models have 6 and 89 parameters, so shards are padded and
// shard boundaries fall inside parameters.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "autograd/layers.h"
#include "autograd/optim/adam.h"
#include "autograd/optim/sgd.h"
#include "comm/ddp/distributed_data_parallel.h"
#include "comm/ddp/zero_redundancy_optimizer.h"
#include "tests/support/mpi_test.h"

using namespace ringdp;
using namespace ringdp::testing;
using namespace ringdp::autograd;

namespace {

std::shared_ptr<Module> make_model(bool mlp, DType dtype) {
  if (!mlp) return std::make_shared<Linear>(LinearOptions(5, 1).dtype(dtype), 3);  // 6 elements
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Linear>(LinearOptions(5, 8).dtype(dtype), 3), std::make_shared<ReLU>(),
      std::make_shared<Linear>(LinearOptions(8, 4).dtype(dtype), 4), std::make_shared<ReLU>(),
      std::make_shared<Linear>(LinearOptions(4, 1).dtype(dtype), 5)});  // 89 elements
}

enum class Kind { sgd_momentum, adam, adamw };

std::unique_ptr<optim::Optimizer> make_optimizer(Kind kind, std::vector<Tensor> params) {
  switch (kind) {
    case Kind::sgd_momentum:
      return std::make_unique<optim::SGD>(std::move(params),
                                          optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.01));
    case Kind::adam:
      return std::make_unique<optim::Adam>(std::move(params), optim::AdamOptions(0.01).weight_decay(0.01));
    case Kind::adamw:
      return std::make_unique<optim::AdamW>(std::move(params),
                                            optim::AdamOptions(0.01).betas(0.8, 0.99).weight_decay(0.1));
  }
  return nullptr;
}

struct Result {
  std::vector<double> params;
  StateDict state;
};

// Five steps on rank-dependent batches of 3 samples; zero picks ZeRO or plain DDP + the optimizer.
Result train(bool mlp, DType dtype, Kind kind, bool zero) {
  auto model = make_model(mlp, dtype);
  ddp::DistributedDataParallel ddp(model, world_ptr(), {.sync_gradients = !zero});
  std::unique_ptr<optim::Optimizer> opt;
  ddp::ZeroRedundancyOptimizer* zero_opt = nullptr;
  if (zero) {
    auto owned = std::make_unique<ddp::ZeroRedundancyOptimizer>(
        model->named_parameters(), world_ptr(),
        [kind](std::vector<Tensor> p) { return make_optimizer(kind, p); });
    zero_opt = owned.get();
    opt = std::move(owned);
  } else {
    opt = make_optimizer(kind, model->parameters());
  }
  for (int step = 0; step < 5; ++step) {
    const uint64_t seed = 100 * step + world().rank();
    const Tensor x = randn({3, 5}, seed, 0, 1, dtype), y = randn({3, 1}, seed + 50, 0, 1, dtype);
    opt->zero_grad();
    ddp.backward(mse_loss(ddp(x), y));
    opt->step();
  }
  Result out;
  for (const Tensor& p : model->parameters())
    for (double v : p.to_vector()) out.params.push_back(v);
  if (zero_opt) zero_opt->consolidate_state_dict();
  out.state = opt->state_dict();
  return out;
}

}  // namespace

TEST_CASE("ZeRO gives the parameters and the state of DDP with the same optimizer", "[zero]") {
  for (bool mlp : {false, true}) {
    for (DType dtype : {DType::float64, DType::float32}) {
      for (Kind kind : {Kind::sgd_momentum, Kind::adam, Kind::adamw}) {
        CAPTURE(mlp, dtype_name(dtype), static_cast<int>(kind), world().size());
        const Result want = train(mlp, dtype, kind, false), got = train(mlp, dtype, kind, true);
        // Different summation orders (the DDP bucket's all-reduce vs the flat reduce-scatter) are
        // the only difference; Adam divides by sqrt(v), which magnifies float32's rounding most.
        const double tol = dtype == DType::float64 ? 1e-12 : 2e-5;
        REQUIRE(got.params.size() == want.params.size());
        for (size_t i = 0; i < want.params.size(); ++i) {
          CAPTURE(i);
          CHECK(std::fabs(got.params[i] - want.params[i]) <= tol * std::max(1.0, std::fabs(want.params[i])));
        }
        REQUIRE(got.state.size() == want.state.size());
        for (size_t e = 0; e < want.state.size(); ++e) {
          CAPTURE(want.state[e].first);
          CHECK(got.state[e].first == want.state[e].first);
          const auto a = got.state[e].second.to_vector(), b = want.state[e].second.to_vector();
          REQUIRE(a.size() == b.size());
          for (size_t i = 0; i < a.size(); ++i)
            CHECK(std::fabs(a[i] - b[i]) <= tol * std::max(1.0, std::fabs(b[i])));
        }
      }
    }
  }
}

TEST_CASE("ZeRO holds 1/N of Adam's state per rank, shards padded to equal size", "[zero]") {
  const int N = world().size();
  auto model = make_model(true, DType::float32);
  ddp::ZeroRedundancyOptimizer zero(model->named_parameters(), world_ptr(), [](std::vector<Tensor> p) {
    return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions(0.01));
  });
  CHECK(zero.total_elements() == 89);
  CHECK(zero.shard_elements() == (89 + N - 1) / N);
  CHECK(zero.layout().size() == 6);
  CHECK(zero.layout().back().end == 89);
  CHECK(zero.state_bytes() == 0);  // no state before the first step, as in PyTorch
  for (Tensor& p : model->parameters()) p.set_grad(zeros(p.shape(), p.dtype()));
  zero.step();
  CHECK(zero.state_bytes() == 2 * 4 * zero.shard_elements());
  CHECK(zero.unsharded_state_bytes() == 2 * 4 * 89);
  REQUIRE_THROWS_WITH(zero.state_dict(), Catch::Matchers::Contains("consolidate_state_dict()"));
  zero.consolidate_state_dict();
  CHECK(zero.state_dict().size() == 3 * 6);  // exp_avg, exp_avg_sq and step of each parameter
}

TEST_CASE("ZeRO resumes from a consolidated state exactly where it left off", "[zero]") {
  // Two optimizers over two copies of one model: the second is rebuilt from the first's
  // consolidated state after two steps (a checkpoint's round trip), then both take two more.
  auto a = make_model(true, DType::float64), b = make_model(true, DType::float64);
  const auto adam = [](std::vector<Tensor> p) {
    return std::make_unique<optim::AdamW>(std::move(p), optim::AdamOptions(0.01).weight_decay(0.1));
  };
  ddp::ZeroRedundancyOptimizer za(a->named_parameters(), world_ptr(), adam);
  auto zb = std::make_unique<ddp::ZeroRedundancyOptimizer>(b->named_parameters(), world_ptr(), adam);
  for (int step = 0; step < 4; ++step) {
    if (step == 2) {
      za.consolidate_state_dict();
      zb = std::make_unique<ddp::ZeroRedundancyOptimizer>(b->named_parameters(), world_ptr(), adam);
      zb->load_state_dict(za.state_dict());
    }
    const Tensor x = randn({3, 5}, 7 + step, 0, 1, DType::float64),
                 y = randn({3, 1}, 70 + step, 0, 1, DType::float64);
    for (auto* pair : {&za, zb.get()}) {
      auto& model = pair == &za ? a : b;
      pair->zero_grad();
      mse_loss((*model)(x), y).backward();
      pair->step();
    }
  }
  const auto pa = a->parameters(), pb = b->parameters();
  for (size_t i = 0; i < pa.size(); ++i) CHECK(pa[i].to_vector() == pb[i].to_vector());
}

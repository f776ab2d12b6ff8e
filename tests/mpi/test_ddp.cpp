// The DDP invariant: N ranks, each on its shard of the global batch, end with the same
// parameters as one process training on the whole global batch (computed here on every rank
// without any communication). Also: bucket layouts agree, no_sync accumulates correctly, and
// misuse is reported.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/layers.h"
#include "autograd/optim/sgd.h"
#include "comm/ddp/distributed_data_parallel.h"
#include "comm/ddp/distributed_sampler.h"
#include "tests/support/mpi_test.h"

using namespace ringdp;
using namespace ringdp::testing;
using namespace ringdp::autograd;

namespace {

// A fixed regression set, the same on every rank (drawn from seeds; nothing of the trainer app's).
struct Samples {
  Tensor x;  ///< [samples, 5] float64
  Tensor y;  ///< [samples, 1] float64
};

Samples make_samples(int64_t samples, uint64_t seed) {
  return {randn({samples, 5}, seed, 0.0, 1.0, DType::float64),
          randn({samples, 1}, seed + 1, 0.0, 1.0, DType::float64)};
}

// Rows `indices` of the set, as `dtype` host tensors.
void gather_rows(const Samples& data, const std::vector<int64_t>& indices, DType dtype, Tensor& x,
                 Tensor& y) {
  const int64_t F = data.x.size(1), B = static_cast<int64_t>(indices.size());
  Tensor hx = empty({B, F}, DType::float64), hy = empty({B, 1}, DType::float64);
  for (int64_t i = 0; i < B; ++i) {
    std::copy_n(data.x.data<double>() + indices[i] * F, F, hx.data<double>() + i * F);
    hy.data<double>()[i] = data.y.data<double>()[indices[i]];
  }
  x = hx.to(dtype);
  y = hy.to(dtype);
}

std::shared_ptr<Module> make_model(bool mlp, DType dtype) {
  if (!mlp) return std::make_shared<Linear>(LinearOptions(5, 1).dtype(dtype), 3);
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Linear>(LinearOptions(5, 8).dtype(dtype), 3), std::make_shared<ReLU>(),
      std::make_shared<Linear>(LinearOptions(8, 4).dtype(dtype), 4), std::make_shared<ReLU>(),
      std::make_shared<Linear>(LinearOptions(4, 1).dtype(dtype), 5)});
}

struct Run {
  bool mlp;
  DType dtype;
  double bucket_mb = 25;
  comm::Algorithm algorithm = comm::Algorithm::automatic;
  bool overlap = true;
  bool shared_buckets = false;
  std::vector<ddp::DdpEvent>* events = nullptr;  // when set: what DDP reported, every step
};

constexpr int64_t kSamples = 24, kPerRankBatch = 2, kEpochs = 3;

// Trains with DDP on this rank's shard; returns the final parameters.
std::vector<double> train_ddp(const Run& run) {
  auto& comm = world();
  const Samples data = make_samples(kSamples, 11);
  auto model = make_model(run.mlp, run.dtype);
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  ddp::DistributedDataParallel ddp(model, world_ptr(),
                                   {.bucket_cap_mb = run.bucket_mb,
                                    .first_bucket_mb = run.bucket_mb,
                                    .algorithm = run.algorithm,
                                    .overlap = run.overlap,
                                    .shared_buckets = run.shared_buckets,
                                    .on_event = [&run](const ddp::DdpEvent& e) {
                                      if (run.events) run.events->push_back(e);
                                    }});
  ddp::DistributedSampler sampler(kSamples, comm.rank(), comm.size(), true, 5);
  Tensor x, y;
  for (int64_t epoch = 0; epoch < kEpochs; ++epoch) {
    sampler.set_epoch(epoch);
    const auto mine = sampler.indices();
    for (size_t begin = 0; begin < mine.size(); begin += kPerRankBatch) {
      gather_rows(data, {mine.begin() + begin, mine.begin() + begin + kPerRankBatch}, run.dtype, x, y);
      sgd.zero_grad();
      ddp.backward(mse_loss(ddp(x), y));
      sgd.step();
    }
  }
  std::vector<double> out;
  for (const Tensor& p : model->parameters())
    for (double v : p.to_vector()) out.push_back(v);
  return out;
}

// One process, the whole global batch (N·b samples, in the same order), no communication.
std::vector<double> train_reference(const Run& run) {
  const int N = world().size();
  const Samples data = make_samples(kSamples, 11);
  auto model = make_model(run.mlp, run.dtype);
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  ddp::DistributedSampler sampler(kSamples, 0, N, true, 5);
  Tensor x, y;
  for (int64_t epoch = 0; epoch < kEpochs; ++epoch) {
    sampler.set_epoch(epoch);
    const auto order = sampler.global_order();
    const int64_t global_batch = kPerRankBatch * N;
    for (size_t begin = 0; begin < order.size(); begin += global_batch) {
      gather_rows(data, {order.begin() + begin, order.begin() + begin + global_batch}, run.dtype, x, y);
      sgd.zero_grad();
      mse_loss((*model)(x), y).backward();
      sgd.step();
    }
  }
  std::vector<double> out;
  for (const Tensor& p : model->parameters())
    for (double v : p.to_vector()) out.push_back(v);
  return out;
}

int64_t count_far(const std::vector<double>& got, const std::vector<double>& want, double rtol) {
  int64_t far = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > rtol * std::max(1.0, std::fabs(want[i]))) {
      if (far < 3) UNSCOPED_INFO("parameter element " << i << ": " << got[i] << " vs " << want[i]);
      ++far;
    }
  return far;
}

}  // namespace

TEST_CASE("N ranks with DDP match one process on the global batch", "[ddp][invariant]") {
  for (bool mlp : {false, true}) {
    for (DType dtype : {DType::float32, DType::float64}) {
      const Run run{mlp, dtype};
      const double rtol = dtype == DType::float32 ? 1e-5 : 1e-12;
      INFO((mlp ? "mlp " : "linear ") << dtype_name(dtype));
      REQUIRE(global_sum(count_far(train_ddp(run), train_reference(run), rtol)) == 0);
    }
  }
}

TEST_CASE("one bucket and many buckets give the same parameters", "[ddp][buckets]") {
  // Recursive doubling reduces each element in an order fixed by the ranks alone, so the
  // layout cannot change a single bit; with the ring, an element's order depends on the chunk
  // it falls in, so the two layouts agree to rounding.
  const Run one{true, DType::float32, 25, comm::Algorithm::recursive_doubling};
  const Run many{true, DType::float32, 1e-6, comm::Algorithm::recursive_doubling};
  REQUIRE(global_sum(train_ddp(one) != train_ddp(many)) == 0);
  const Run ring_one{true, DType::float32, 25, comm::Algorithm::ring};
  const Run ring_many{true, DType::float32, 1e-6, comm::Algorithm::ring};
  REQUIRE(global_sum(count_far(train_ddp(ring_one), train_ddp(ring_many), 1e-6)) == 0);
}

TEST_CASE("buckets in shared allocations give the plain buckets' parameters bit for bit", "[ddp][shared]") {
  // Plain buckets go through the shared-memory slots (or, across hosts, where shared buckets are
  // refused, another algorithm); shared ones are reduced directly. Both sum each element in rank
  // order and divide by the same factor, so not one bit may differ, one bucket or many.
  try {
    world().resolve(comm::CollectiveKind::all_reduce, 8, comm::Algorithm::shared_memory);
  } catch (const Error&) {
    WARN("the ranks span hosts: no shared allocations to compare");
    return;
  }
  for (DType dtype : {DType::float32, DType::float64})
    for (double bucket_mb : {25.0, 1e-6}) {
      INFO(dtype_name(dtype) << " buckets of " << bucket_mb << " MB");
      Run plain{true, dtype, bucket_mb};
      Run shared = plain;
      shared.shared_buckets = true;
      REQUIRE(global_sum(train_ddp(plain) != train_ddp(shared)) == 0);
    }
}

TEST_CASE("without overlap every bucket starts after the last hook, with the same result", "[ddp][overlap]") {
  std::vector<ddp::DdpEvent> overlapped, serial;
  const std::vector<double> with =
      train_ddp({.mlp = true, .dtype = DType::float32, .bucket_mb = 1e-6, .events = &overlapped});
  const std::vector<double> without = train_ddp(
      {.mlp = true, .dtype = DType::float32, .bucket_mb = 1e-6, .overlap = false, .events = &serial});
  REQUIRE(global_sum(with != without) == 0);
  // Per step: 6 hooks and 6 launches (one parameter per bucket). With overlap, buckets 0 and 1
  // (4.bias, 4.weight) launch as soon as the last layer's hooks have fired, before the earlier
  // layers' hooks; without, the 6 launches follow the 6 hooks.
  REQUIRE(overlapped.size() == serial.size());
  REQUIRE(serial.size() % 12 == 0);
  for (size_t step = 0; step < serial.size(); step += 12) {
    for (size_t i = 0; i < 12; ++i) {
      REQUIRE((serial[step + i].kind == ddp::DdpEvent::Kind::hook) == (i < 6));
      if (i >= 6) REQUIRE(serial[step + i].bucket == static_cast<int>(i) - 6);  // index order
    }
    REQUIRE(overlapped[step + 2].kind == ddp::DdpEvent::Kind::launch);
    REQUIRE(overlapped[step + 2].bucket == 0);
    REQUIRE(overlapped[step + 11].kind == ddp::DdpEvent::Kind::launch);
  }
}

namespace {
// out = a(x) + b(x), with the two branches built in an order that depends on the rank: the
// engine runs later nodes first, so even ranks finish b's gradients first and odd ranks a's.
class TwoBranches : public Module {
 public:
  explicit TwoBranches(bool a_first)
      : a_(std::make_shared<Linear>(LinearOptions(5, 1), 7)),
        b_(std::make_shared<Linear>(LinearOptions(5, 1).bias(false), 8)),
        a_first_(a_first) {
    register_module("a", a_);
    register_module("b", b_);
  }
  Tensor forward(const Tensor& x) override {
    if (a_first_) {
      Tensor ya = a_->forward(x);
      return add(ya, b_->forward(x));
    }
    Tensor yb = b_->forward(x);
    return add(a_->forward(x), yb);
  }

 private:
  std::shared_ptr<Linear> a_, b_;
  bool a_first_;
};
}  // namespace

TEST_CASE("buckets launch in index order even when ranks finish gradients in other orders", "[ddp][order]") {
  // docs/exercises.md, exercise 2: launching buckets as they become ready would make ranks issue
  // all-reduces of different buckets (of different sizes) at the same position, which the
  // envelope check reports; index order keeps every rank's sequence the same.
  auto& comm = world();
  std::vector<std::string> hooks;
  auto model = std::make_shared<TwoBranches>(comm.rank() % 2 == 0);
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.1));
  ddp::DistributedDataParallel ddp(
      model, world_ptr(),
      {.bucket_cap_mb = 1e-6, .first_bucket_mb = 1e-6, .on_event = [&](const ddp::DdpEvent& e) {
         if (e.kind == ddp::DdpEvent::Kind::hook) hooks.push_back(e.parameter);
       }});
  const Samples data = make_samples(8, 3);
  sgd.zero_grad();
  ddp.backward(mse_loss(ddp(data.x.to(DType::float32)), data.y.to(DType::float32)));
  sgd.step();
  // The premise: the order really differs between even and odd ranks.
  REQUIRE(hooks.size() == 3);
  const bool b_first = hooks.front() == "b.weight";
  REQUIRE(b_first == (comm.rank() % 2 == 0));
  // The parameters agree on every rank: every bucket was averaged with its own kind.
  std::vector<double> values;
  for (const Tensor& p : model->parameters())
    for (double v : p.to_vector()) values.push_back(v);
  const auto n = static_cast<int64_t>(values.size());
  REQUIRE(n == 11);  // a: 5 weights and a bias, b: 5 weights
  Tensor all = zeros({n * comm.size()}, DType::float64);
  comm.all_gather(from_vector(values, {n}, DType::float64), all);
  for (int r = 0; r < comm.size(); ++r)
    for (int64_t i = 0; i < n; ++i) REQUIRE(all.data<double>()[r * n + i] == all.data<double>()[i]);
}

TEST_CASE("buckets follow reverse registration order", "[ddp][buckets]") {
  auto model = make_model(true, DType::float32);
  {
    ddp::DistributedDataParallel many(model, world_ptr(), {.bucket_cap_mb = 1e-6, .first_bucket_mb = 1e-6});
    const auto layout = many.bucket_layout();
    REQUIRE(layout.size() == 6);
    CHECK(layout.front() == std::vector<std::string>{"4.bias"});
    CHECK(layout.back() == std::vector<std::string>{"0.weight"});
  }
  ddp::DistributedDataParallel one(model, world_ptr(), {});  // one live wrapper at a time
  REQUIRE(one.bucket_layout().size() == 1);
}

TEST_CASE("no_sync over two micro-batches equals one step on both", "[ddp][no_sync]") {
  const Samples data = make_samples(16, 21);
  auto& comm = world();
  Tensor xa, ya, xb, yb;
  gather_rows(data, {2 * comm.rank(), 2 * comm.rank() + 1}, DType::float64, xa, ya);
  gather_rows(data, {8 + comm.rank(), 12 + comm.rank() % 4}, DType::float64, xb, yb);
  auto params_after = [&](bool accumulate) {
    auto model = make_model(true, DType::float64);
    optim::SGD sgd(model->parameters(), optim::SGDOptions(0.1));
    ddp::DistributedDataParallel ddp(model, world_ptr());
    if (accumulate) {
      {
        auto guard = ddp.no_sync();
        ddp.backward(mse_loss(ddp(xa), ya));
      }
      ddp.backward(mse_loss(ddp(xb), yb));
    } else {
      Tensor a = mse_loss(ddp(xa), ya);
      Tensor b = mse_loss((*model)(xb), yb);
      ddp.backward(add(a, b));
    }
    sgd.step();
    std::vector<double> out;
    for (const Tensor& p : model->parameters())
      for (double v : p.to_vector()) out.push_back(v);
    return out;
  };
  REQUIRE(global_sum(count_far(params_after(true), params_after(false), 1e-12)) == 0);
}

TEST_CASE("DDP reports misuse clearly", "[ddp][errors]") {
  auto model = make_model(false, DType::float32);
  ddp::DistributedDataParallel ddp(model, world_ptr());
  const Tensor x = randn({3, 5}, 1), y = zeros({3, 1});
  Tensor loss = mse_loss(ddp(x), y);
  ddp.backward(loss);
  // A second backward through a new graph without going through ddp.forward():
  Tensor again = mse_loss((*model)(x), y);
  REQUIRE_THROWS_WITH(ddp.backward(again), Catch::Contains("arrived twice in one iteration"));
  // A parameter without a gradient: the bias is left out of the loss.
  auto partial = std::make_shared<Linear>(LinearOptions(5, 1), 3);
  ddp::DistributedDataParallel ddp2(partial, world_ptr());
  ddp2.forward(x);
  Tensor only_weight = mse_loss(linear(x, partial->weight), y);
  REQUIRE_THROWS_WITH(ddp2.backward(only_weight), Catch::Contains("parameter(s) bias received no gradient"));
}

TEST_CASE("DDP names the parameter that differs between ranks", "[ddp][errors]") {
  auto& comm = world();
  if (comm.size() == 1) {
    SUCCEED("one rank cannot disagree with itself");
    return;
  }
  // The last rank builds a wider hidden layer than the others.
  const int64_t hidden = comm.rank() == comm.size() - 1 ? 16 : 8;
  auto model = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Linear>(LinearOptions(10, hidden), 1), std::make_shared<ReLU>(),
      std::make_shared<Linear>(LinearOptions(hidden, 1), 2)});
  if (comm.rank() == comm.size() - 1) {
    REQUIRE_THROWS_WITH(
        ddp::DistributedDataParallel(model, world_ptr()),
        Catch::Contains("parameters differ from rank 0's: rank 0 has '0.weight [8, 10] float32', rank " +
                        std::to_string(comm.rank()) + " has '0.weight [16, 10] float32'"));
  } else {
    REQUIRE_THROWS_WITH(ddp::DistributedDataParallel(model, world_ptr()),
                        Catch::Contains("the parameters of rank(s) " + std::to_string(comm.size() - 1) +
                                        " differ from rank 0's"));
  }
}

TEST_CASE("a destroyed wrapper leaves no hook behind, and a live one cannot be doubled", "[ddp][hooks]") {
  auto model = make_model(true, DType::float64);
  const Samples data = make_samples(8, 31);
  Tensor x, y;
  gather_rows(data, {0, 1, 2, 3}, DType::float64, x, y);
  {
    ddp::DistributedDataParallel ddp(model, world_ptr());
    for (const Tensor& p : model->parameters()) CHECK(p.hooks().size() == 1);
    // A second wrapper over the same parameters would all-reduce every gradient twice.
    REQUIRE_THROWS_WITH(ddp::DistributedDataParallel(model, world_ptr()),
                        Catch::Contains("is already wrapped by a live DistributedDataParallel"));
    ddp.backward(mse_loss(ddp(x), y));
  }
  // The wrapper is gone: its hooks too, so a plain backward calls nothing that was freed.
  for (const Tensor& p : model->parameters()) CHECK(p.hooks().empty());
  mse_loss((*model)(x), y).backward();
  // And the parameters may be wrapped again.
  ddp::DistributedDataParallel again(model, world_ptr());
  again.backward(mse_loss(again(x), y));
}

TEST_CASE("frozen parameters are left out, and freezing after wrapping is named", "[ddp][frozen]") {
  auto model = make_model(true, DType::float64);
  Tensor frozen = model->named_parameters().front().second;  // "0.weight"
  frozen.set_requires_grad(false);
  const std::vector<double> before = frozen.to_vector();
  const Samples data = make_samples(8, 41);
  Tensor x, y;
  gather_rows(data, {2 * world().rank(), 2 * world().rank() + 1}, DType::float64, x, y);
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.1));
  ddp::DistributedDataParallel ddp(model, world_ptr());
  for (const auto& bucket : ddp.bucket_layout())
    for (const std::string& name : bucket) CHECK(name != "0.weight");
  sgd.zero_grad();
  ddp.backward(mse_loss(ddp(x), y));
  sgd.step();
  CHECK(frozen.to_vector() == before);
  // Every trainable parameter ended the same on every rank (its gradient was averaged).
  for (const Tensor& p : model->parameters()) {
    Tensor mine = p.clone(), root = p.clone();
    world().broadcast(root, 0);
    REQUIRE(global_sum(mine.to_vector() != root.to_vector()) == 0);
  }
  // Freezing a wrapped parameter later is an error at the next forward, naming it.
  model->named_parameters().back().second.set_requires_grad(false);
  REQUIRE_THROWS_WITH(ddp(x), Catch::Contains("parameter '4.bias' was frozen after DistributedDataParallel"));
}

TEST_CASE("gradients live in their bucket: no copy in or out, and a replaced .grad is taken back",
          "[ddp][view]") {
  const Samples data = make_samples(16, 31);
  auto& comm = world();
  Tensor x, y;
  gather_rows(data, {2 * comm.rank(), 2 * comm.rank() + 1}, DType::float64, x, y);
  // Three steps; before the second, `replace` swaps one .grad for a tensor of DDP's own making.
  auto train = [&](bool replace) {
    auto model = make_model(true, DType::float64);
    optim::SGD sgd(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    ddp::DistributedDataParallel ddp(model, world_ptr(), {.algorithm = comm::Algorithm::recursive_doubling});
    for (int step = 0; step < 3; ++step) {
      sgd.zero_grad();
      if (replace && step == 1) {
        Tensor p = model->parameters().front();
        p.set_grad(zeros(p.shape(), p.dtype()));
      }
      ddp.backward(mse_loss(ddp(x), y));
      for (auto& [name, p] : model->named_parameters()) {
        const auto [bucket, offset] = ddp.locate(name);
        const char* slice = static_cast<const char*>(ddp.bucket_buffer(bucket).data_ptr()) + offset * 8;
        INFO("step " << step << ", " << name);
        REQUIRE(p.grad().data_ptr() == slice);
        REQUIRE(p.grad().shape() == p.shape());
      }
      sgd.step();
    }
    std::vector<double> out;
    for (const Tensor& p : model->parameters())
      for (double v : p.to_vector()) out.push_back(v);
    return out;
  };
  REQUIRE(global_sum(train(false) != train(true)) == 0);
}

TEST_CASE("one rank runs no collective: the average of one gradient is itself", "[ddp][one_rank]") {
  auto& comm = world();
  const Samples data = make_samples(8, 41);
  Tensor x, y;
  gather_rows(data, {comm.rank() % 8}, DType::float32, x, y);
  auto model = make_model(true, DType::float32);
  ddp::DistributedDataParallel ddp(model, world_ptr());
  std::atomic<int> all_reduces{0};
  comm.set_step_observer([&](const comm::Position& where) {
    if (where.kind == comm::CollectiveKind::all_reduce && where.step == where.steps + 1) ++all_reduces;
  });
  ddp.backward(mse_loss(ddp(x), y));
  comm.set_step_observer({});
  if (comm.size() == 1) {
    REQUIRE(all_reduces == 0);
    REQUIRE(ddp.last_stats().bytes_reduced == 0);
  } else {
    REQUIRE(all_reduces == static_cast<int>(ddp.bucket_layout().size()));
  }
}

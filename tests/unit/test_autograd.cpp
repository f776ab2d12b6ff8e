// autograd/: gradients against central finite differences (float64) and closed forms, the
// engine's ordering, hooks and errors, modules' names and state dicts, SGD against hand
// computation, and the seed's model fitting synthetic data on one process.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <memory>
#include <unordered_set>

#include "autograd/graph_walk.h"
#include "autograd/layers.h"
#include "autograd/node.h"
#include "autograd/optim/adam.h"
#include "autograd/optim/sgd.h"
#include "tensor/ops.h"
#include "tests/support/compare.h"

using namespace ringdp;
using namespace ringdp::autograd;
using Catch::Contains;

namespace {

// Central differences of loss() with respect to every element of every tensor in `wrt`,
// compared with the gradients backward() left in .grad: max relative error.
double max_gradient_error(const std::vector<Tensor>& wrt, const std::function<Tensor()>& loss) {
  Tensor l = loss();
  for (Tensor t : wrt) t.set_grad(Tensor());
  l.backward();
  const double h = 1e-6;
  double worst = 0;
  for (Tensor t : wrt) {
    const std::vector<double> analytic = t.grad().to_vector();
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double saved = t.item(i);
      t.set_item(i, saved + h);
      double plus, minus;
      {
        NoGradGuard no_grad;
        plus = loss().item();
        t.set_item(i, saved - h);
        minus = loss().item();
      }
      t.set_item(i, saved);
      const double numeric = (plus - minus) / (2 * h);
      const double scale = std::max({std::fabs(numeric), std::fabs(analytic[i]), 1e-2});
      worst = std::max(worst, std::fabs(numeric - analytic[i]) / scale);
    }
  }
  return worst;
}

Tensor param(Shape shape, uint64_t seed) {
  Tensor t = randn(std::move(shape), seed, 0, 1, DType::float64);
  t.set_requires_grad(true);
  return t;
}

}  // namespace

TEST_CASE("every function's gradient matches finite differences", "[autograd][gradcheck]") {
  Tensor x = param({5, 4}, 1), W = param({3, 4}, 2), b = param({3}, 3), target = param({5, 3}, 4);
  SECTION("linear + mse (mean)") {
    CHECK(max_gradient_error({x, W, b, target}, [&] { return mse_loss(linear(x, W, b), target); }) < 1e-6);
  }
  SECTION("linear without bias + mse (sum)") {
    CHECK(max_gradient_error({x, W}, [&] { return mse_loss(linear(x, W), target, Reduction::sum); }) < 1e-6);
  }
  SECTION("relu and add") {
    CHECK(max_gradient_error({x, W, b}, [&] {
            Tensor h = linear(x, W, b);
            return mse_loss(add(relu(h), h), target);
          }) < 1e-6);
  }
}

TEST_CASE("a 3-layer MLP with ReLU matches finite differences", "[autograd][gradcheck]") {
  Sequential mlp{
      std::make_shared<Linear>(LinearOptions(6, 8).dtype(DType::float64), 11), std::make_shared<ReLU>(),
      std::make_shared<Linear>(LinearOptions(8, 5).dtype(DType::float64), 12), std::make_shared<ReLU>(),
      std::make_shared<Linear>(LinearOptions(5, 2).dtype(DType::float64), 13)};
  const Tensor x = randn({7, 6}, 21, 0, 1, DType::float64), y = randn({7, 2}, 22, 0, 1, DType::float64);
  CHECK(max_gradient_error(mlp.parameters(), [&] { return mse_loss(mlp(x), y); }) < 1e-6);
}

TEST_CASE("Linear + MSE gradients equal the closed forms", "[autograd]") {
  // d = 2(ŷ − y)/n;  dW = dᵀx;  db = Σ_rows d
  const int64_t B = 9, C = 4;
  Tensor x = randn({B, C}, 31, 0, 1, DType::float64), y = randn({B, 1}, 32, 0, 1, DType::float64);
  Linear layer(LinearOptions(C, 1).dtype(DType::float64), 5);
  Tensor pred = layer(x);
  mse_loss(pred, y).backward();
  std::vector<double> dW(C, 0.0);
  double db = 0;
  for (int64_t i = 0; i < B; ++i) {
    const double d = 2 * (pred.item(i) - y.item(i)) / B;
    db += d;
    for (int64_t c = 0; c < C; ++c) dW[c] += d * x.at({i, c});
  }
  RINGDP_REQUIRE_CLOSE(layer.weight.grad().to_vector(), dW, 1e-12, 1e-14);
  RINGDP_REQUIRE_CLOSE(layer.bias.grad().to_vector(), std::vector<double>{db}, 1e-12, 1e-14);
}

TEST_CASE("a tensor used twice gets both contributions, and its hook fires once after them",
          "[autograd][hooks]") {
  Tensor W = param({2, 3}, 41);
  const Tensor x1 = randn({4, 3}, 42, 0, 1, DType::float64), x2 = randn({4, 3}, 43, 0, 1, DType::float64);
  const Tensor target = zeros({4, 2}, DType::float64);
  int calls = 0;
  std::vector<double> seen;
  W.register_hook([&](Tensor& leaf) {
    ++calls;
    seen = leaf.grad().to_vector();
  });
  Tensor loss = mse_loss(add(linear(x1, W), linear(x2, W)), target);
  loss.backward();
  CHECK(calls == 1);
  CHECK(seen == W.grad().to_vector());
  // The same gradient from the single product (x1 + x2)·Wᵀ: both contributions arrived.
  Tensor W2 = W.clone();
  W2.set_requires_grad(true);
  mse_loss(linear(ops::add(x1, x2), W2), target).backward();
  RINGDP_REQUIRE_CLOSE(W.grad().to_vector(), W2.grad().to_vector(), 1e-12, 1e-14);
}

TEST_CASE("hooks fire in the order the engine finishes leaves: last layer first", "[autograd][hooks]") {
  Sequential mlp{std::make_shared<Linear>(LinearOptions(3, 4), 1), std::make_shared<ReLU>(),
                 std::make_shared<Linear>(LinearOptions(4, 1), 2)};
  std::vector<std::string> order;
  for (auto& [name, p] : mlp.named_parameters())
    p.register_hook([&order, n = name](Tensor&) { order.push_back(n); });
  mse_loss(mlp(randn({5, 3}, 7)), zeros({5, 1})).backward();
  REQUIRE(order.size() == 4);
  CHECK((order[0] == "2.weight" || order[0] == "2.bias"));
  CHECK((order[3] == "0.weight" || order[3] == "0.bias"));
  order.clear();
  mse_loss(mlp(randn({5, 3}, 8)), zeros({5, 1})).backward();
  CHECK(order.size() == 4);  // once per backward
}

TEST_CASE("gradients accumulate across backward calls until zero_grad", "[autograd]") {
  Linear layer(LinearOptions(2, 1).dtype(DType::float64), 3);
  const Tensor x = randn({3, 2}, 5, 0, 1, DType::float64), y = zeros({3, 1}, DType::float64);
  mse_loss(layer(x), y).backward();
  const auto once = layer.weight.grad().to_vector();
  mse_loss(layer(x), y).backward();
  const auto twice = layer.weight.grad().to_vector();
  for (size_t i = 0; i < once.size(); ++i) CHECK(twice[i] == Approx(2 * once[i]));
  layer.zero_grad();
  for (double g : layer.weight.grad().to_vector()) CHECK(g == 0.0);
}

TEST_CASE("autograd errors are clear", "[autograd][errors]") {
  Tensor x = randn({4, 3}, 1), W = param({2, 5}, 2).to(DType::float32);
  W.set_requires_grad(true);
  REQUIRE_THROWS_WITH(linear(x, W), Contains("input shape [4, 3] does not match weight shape [2, 5]"));
  REQUIRE_THROWS_WITH(mse_loss(zeros({100, 1}), zeros({100, 10})),
                      Contains("prediction shape [100, 1] does not match target shape [100, 10]"));
  Tensor W3 = param({2, 3}, 3).to(DType::float32);
  W3.set_requires_grad(true);
  Tensor y = linear(x, W3);
  REQUIRE_THROWS_WITH(y.backward(), Contains("non-scalar tensor of shape [4, 2] needs a gradient"));
  Tensor loss = mse_loss(y, zeros({4, 2}));
  loss.backward();
  REQUIRE_THROWS_WITH(loss.backward(), Contains("graph that has already been freed"));
  REQUIRE_THROWS_WITH(zeros({2}).backward(), Contains("does not require grad"));
}

TEST_CASE("no_grad records nothing", "[autograd]") {
  Tensor W = param({2, 3}, 1);
  NoGradGuard guard;
  Tensor y = linear(randn({4, 3}, 2, 0, 1, DType::float64), W);
  CHECK_FALSE(y.requires_grad());
  CHECK(y.grad_fn() == nullptr);
}

TEST_CASE("modules name parameters as PyTorch does and round-trip state dicts", "[autograd][modules]") {
  Sequential mlp{std::make_shared<Linear>(LinearOptions(3, 4), 1), std::make_shared<ReLU>(),
                 std::make_shared<Linear>(LinearOptions(4, 1).bias(false), 2)};
  std::vector<std::string> names;
  for (auto& [name, p] : mlp.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "2.weight"});
  Linear single(LinearOptions(10, 1), 0);
  CHECK(single.named_parameters()[0].first == "weight");
  CHECK(single.named_parameters()[1].first == "bias");
  // PyTorch's default init: uniform in ±1/sqrt(in_features).
  for (double w : single.weight.to_vector()) CHECK(std::fabs(w) <= 1 / std::sqrt(10.0));
  // Same seed, same parameters; state dicts copy values.
  Sequential other{std::make_shared<Linear>(LinearOptions(3, 4), 9), std::make_shared<ReLU>(),
                   std::make_shared<Linear>(LinearOptions(4, 1).bias(false), 9)};
  other.load_state_dict(mlp.state_dict());
  for (size_t i = 0; i < 3; ++i) CHECK(other.parameters()[i].to_vector() == mlp.parameters()[i].to_vector());
  StateDict wrong = mlp.state_dict();
  wrong[0].second = zeros({4, 4});
  REQUIRE_THROWS_WITH(other.load_state_dict(wrong),
                      Contains("'0.weight' has shape [4, 4] in the state dict but [4, 3]"));
  const StateDict full_state = mlp.state_dict();
  StateDict missing(full_state.begin() + 1, full_state.end());
  REQUIRE_THROWS_WITH(other.load_state_dict(missing), Contains("missing parameter '0.weight'"));
}

namespace {
// One parameter's SGD trajectory by hand, the rule written out independently of kernels/.
std::vector<double> hand_sgd(double p, const std::vector<double>& grads, double lr, double mu, double wd,
                             bool nesterov) {
  std::vector<double> out;
  double buf = 0;
  for (size_t t = 0; t < grads.size(); ++t) {
    double g = grads[t] + wd * p;
    if (mu != 0) {
      buf = t == 0 ? g : mu * buf + g;
      g = nesterov ? g + mu * buf : buf;
    }
    p -= lr * g;
    out.push_back(p);
  }
  return out;
}
}  // namespace

TEST_CASE("SGD matches hand-computed updates over three steps", "[autograd][sgd]") {
  struct Case {
    double mu, wd;
    bool nesterov;
  };
  for (Case c : {Case{0, 0, false}, Case{0.9, 0, false}, Case{0, 0.1, false}, Case{0.9, 0.1, false},
                 Case{0.9, 0.01, true}}) {
    CAPTURE(c.mu, c.wd, c.nesterov);
    Tensor p = from_vector({1.0, -2.0}, {2}, DType::float64);
    p.set_requires_grad(true);
    optim::SGD sgd({p}, optim::SGDOptions(0.1).momentum(c.mu).weight_decay(c.wd).nesterov(c.nesterov));
    const std::vector<std::vector<double>> grads = {{0.5, 1.0}, {-0.25, 2.0}, {1.5, -1.0}};
    const auto want0 = hand_sgd(1.0, {0.5, -0.25, 1.5}, 0.1, c.mu, c.wd, c.nesterov);
    const auto want1 = hand_sgd(-2.0, {1.0, 2.0, -1.0}, 0.1, c.mu, c.wd, c.nesterov);
    for (int t = 0; t < 3; ++t) {
      p.set_grad(from_vector(grads[t], {2}, DType::float64));
      sgd.step();
      CHECK(p.item(0) == Approx(want0[t]).epsilon(1e-14));
      CHECK(p.item(1) == Approx(want1[t]).epsilon(1e-14));
    }
  }
  Tensor q = zeros({1});
  q.set_requires_grad(true);
  REQUIRE_THROWS_WITH(optim::SGD({q}, optim::SGDOptions(-0.5)), Contains("learning rate -0.5 is negative"));
}

TEST_CASE("SGD state dict round-trips the momentum buffers", "[autograd][sgd]") {
  Tensor p = from_vector({1.0}, {1}, DType::float64), q = from_vector({1.0}, {1}, DType::float64);
  p.set_requires_grad(true);
  q.set_requires_grad(true);
  optim::SGD a({p}, optim::SGDOptions(0.1).momentum(0.9)), b({q}, optim::SGDOptions(0.1).momentum(0.9));
  p.set_grad(from_vector({1.0}, {1}, DType::float64));
  q.set_grad(from_vector({1.0}, {1}, DType::float64));
  a.step();
  b.step();
  optim::SGD restored({q}, optim::SGDOptions(0.1).momentum(0.9));
  restored.load_state_dict(b.state_dict());
  a.step();
  restored.step();
  CHECK(p.item() == q.item());
}

namespace {
// One parameter's Adam/AdamW trajectory by hand in double, the rule of torch.optim.Adam/AdamW
// written out independently of kernels/.
std::vector<double> hand_adam(double p, const std::vector<double>& grads, double lr, double b1, double b2,
                              double eps, double wd, bool decoupled) {
  std::vector<double> out;
  double m = 0, v = 0;
  for (size_t t = 1; t <= grads.size(); ++t) {
    double g = grads[t - 1];
    if (decoupled)
      p *= 1 - lr * wd;
    else
      g += wd * p;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    const double m_hat = m / (1 - std::pow(b1, t)), v_hat = v / (1 - std::pow(b2, t));
    p -= lr * m_hat / (std::sqrt(v_hat) + eps);
    out.push_back(p);
  }
  return out;
}
}  // namespace

TEST_CASE("Adam and AdamW match hand-computed updates over three steps", "[autograd][adam]") {
  struct Case {
    double wd;
    bool decoupled;
  };
  for (Case c : {Case{0, false}, Case{0.1, false}, Case{0, true}, Case{0.1, true}}) {
    CAPTURE(c.wd, c.decoupled);
    Tensor p = from_vector({1.0, -2.0}, {2}, DType::float64);
    p.set_requires_grad(true);
    const auto options = optim::AdamOptions(0.05).betas(0.8, 0.99).eps(1e-6).weight_decay(c.wd);
    std::unique_ptr<optim::Optimizer> adam;
    if (c.decoupled)
      adam = std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, options);
    else
      adam = std::make_unique<optim::Adam>(std::vector<Tensor>{p}, options);
    const std::vector<std::vector<double>> grads = {{0.5, 1.0}, {-0.25, 2.0}, {1.5, -1.0}};
    const auto want0 = hand_adam(1.0, {0.5, -0.25, 1.5}, 0.05, 0.8, 0.99, 1e-6, c.wd, c.decoupled);
    const auto want1 = hand_adam(-2.0, {1.0, 2.0, -1.0}, 0.05, 0.8, 0.99, 1e-6, c.wd, c.decoupled);
    for (int t = 0; t < 3; ++t) {
      p.set_grad(from_vector(grads[t], {2}, DType::float64));
      adam->step();
      CHECK(p.item(0) == Approx(want0[t]).epsilon(1e-13));
      CHECK(p.item(1) == Approx(want1[t]).epsilon(1e-13));
    }
    CHECK(adam->state_bytes() == 2 * 2 * 8);  // exp_avg and exp_avg_sq of two float64 values
  }
  Tensor q = zeros({1});
  q.set_requires_grad(true);
  REQUIRE_THROWS_WITH(optim::Adam({q}, optim::AdamOptions(0.1).betas(0.9, 1.0)),
                      Contains("Adam: beta2 1 is outside [0, 1)"));
  REQUIRE_THROWS_WITH(optim::AdamW({q}, optim::AdamOptions(0.1).eps(-1)),
                      Contains("AdamW: eps -1 is negative"));
  REQUIRE_THROWS_WITH(optim::Adam({q}, optim::AdamOptions(0.1).amsgrad(true)),
                      Contains("amsgrad is not supported"));
}

TEST_CASE("Adam state dict round-trips the moments and the step count", "[autograd][adam]") {
  Tensor p = from_vector({1.0, 3.0}, {2}, DType::float64), q = from_vector({1.0, 3.0}, {2}, DType::float64);
  Tensor unused = zeros({3}, DType::float64);
  for (Tensor* t : {&p, &q, &unused}) t->set_requires_grad(true);
  const auto options = optim::AdamOptions(0.1).weight_decay(0.01);
  optim::AdamW a({p, unused}, options), b({q, unused}, options);
  for (int t = 0; t < 2; ++t) {
    p.set_grad(from_vector({1.0, -0.5}, {2}, DType::float64));
    q.set_grad(from_vector({1.0, -0.5}, {2}, DType::float64));
    a.step();
    b.step();
  }
  const auto state = b.state_dict();
  REQUIRE(state.size() == 3);  // the parameter without a gradient has no state yet
  CHECK(state[0].first == "exp_avg.0");
  CHECK(state[2].first == "step.0");
  CHECK(state[2].second.item() == 2);
  optim::AdamW restored({q, unused}, options);
  restored.load_state_dict(state);
  a.step();
  restored.step();
  CHECK(p.item(0) == q.item(0));
  CHECK(p.item(1) == q.item(1));
  auto partial = state;
  partial.pop_back();
  REQUIRE_THROWS_WITH(restored.load_state_dict(partial),
                      Contains("only some of exp_avg, exp_avg_sq and step"));
  REQUIRE_THROWS_WITH(restored.load_state_dict({{"momentum_buffer.0", p}}),
                      Contains("unexpected entry 'momentum_buffer.0'"));
}

TEST_CASE("the seed's model fits synthetic data on one process", "[autograd][fit]") {
  // y = X·w* + b* + noise, noise std 1 (variance 1); Linear(10→1), MSE, SGD lr 0.01, full batch.
  const int64_t n = 1000, F = 10;
  const Tensor X = randn({n, F}, 101);
  const Tensor w_true = randn({F, 1}, 102, 0.0, 0.3);
  Tensor y = ops::linear_forward(X, w_true.reshape({1, F}), full({1}, 0.5));
  ops::add_(y, randn({n, 1}, 103));
  Linear model(LinearOptions(F, 1), 7);
  optim::SGD sgd(model.parameters(), optim::SGDOptions(0.01));
  double previous = INFINITY, last = 0;
  bool monotone = true;
  for (int step = 0; step < 200; ++step) {
    sgd.zero_grad();
    Tensor loss = mse_loss(model(X), y);
    loss.backward();
    sgd.step();
    last = loss.item();
    monotone = monotone && last < previous;
    previous = last;
  }
  CHECK(monotone);
  INFO("final loss " << last);
  CHECK(last < 1.1);  // within 10% of the noise variance
}

TEST_CASE("the worked example of docs/autograd.md", "[autograd][docs]") {
  Tensor x = from_vector({1, 2}, {1, 2}, DType::float64), y = from_vector({1}, {1, 1}, DType::float64);
  Tensor W = from_vector({0.5, -1}, {1, 2}, DType::float64), b = from_vector({0.25}, {1}, DType::float64);
  W.set_requires_grad(true);
  b.set_requires_grad(true);
  Tensor pred = linear(x, W, b);
  Tensor loss = mse_loss(pred, y);
  CHECK(pred.item() == -1.25);
  CHECK(loss.item() == 5.0625);
  CHECK(std::string(loss.grad_fn()->name()) == "MseLossBackward");
  CHECK(std::string(pred.grad_fn()->name()) == "LinearBackward");
  loss.backward();
  CHECK(W.grad().to_vector() == std::vector<double>{-4.5, -9});
  CHECK(b.grad().to_vector() == std::vector<double>{-4.5});
}

TEST_CASE("reachable_leaves: the parameters an output depends on, each once", "[autograd][graph_walk]") {
  Linear used(LinearOptions(3, 2), 1), unused(LinearOptions(3, 2), 2);
  const Tensor x = randn({4, 3}, 3);
  const Tensor out = relu(add(used(x), linear(x, used.weight)));  // used.weight reached twice
  const auto leaves = reachable_leaves(out);
  REQUIRE(leaves.size() == 2);
  REQUIRE(leaves.contains(used.weight.id()));
  REQUIRE(leaves.contains(used.bias.id()));
  REQUIRE_FALSE(leaves.contains(unused.weight.id()));
  REQUIRE(reachable_leaves(x).empty());  // needs no gradient
  REQUIRE(reachable_leaves(used.bias) == std::unordered_set<const void*>{used.bias.id()});
}

// DDP steps in which not everything takes part: a parameter skipped by the forward on some ranks
// or all (find_unused_parameters, and the error that names it when the option is off), and ranks
// that run out of batches at different steps (Join, comm/ddp/join.h). Each is held to the DDP
// invariant: every rank ends with the parameters of one process that, at each step, takes the
// mean gradient over the ranks that had a batch, computed here on every rank without
// communication. float64, so the tolerance is rounding only.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autograd/layers.h"
#include "autograd/optim/sgd.h"
#include "comm/ddp/distributed_data_parallel.h"
#include "comm/ddp/join.h"
#include "tensor/ops.h"
#include "tests/support/mpi_test.h"

using namespace ringdp;
using namespace ringdp::testing;
using namespace ringdp::autograd;

namespace {

constexpr int64_t F = 5, B = 2;  // features, rows per rank per step

// y = trunk(x) + branch(x), or trunk(x) alone while use_branch is false. Indices among the
// parameters: 0 trunk.weight, 1 trunk.bias, 2 branch.weight, 3 branch.bias.
class SkippableBranch : public Module {
 public:
  SkippableBranch()
      : trunk_(std::make_shared<Linear>(LinearOptions(F, 1).dtype(DType::float64), 3)),
        branch_(std::make_shared<Linear>(LinearOptions(F, 1).dtype(DType::float64), 4)) {
    register_module("trunk", trunk_);
    register_module("branch", branch_);
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = trunk_->forward(x);
    return use_branch ? add(y, branch_->forward(x)) : y;
  }
  bool use_branch = true;
  const Tensor& branch_weight() const { return branch_->weight; }

 private:
  std::shared_ptr<Linear> trunk_, branch_;
};

// Who takes part in what. Step k of epoch e on rank r reads its own B rows of the data set.
struct Plan {
  std::function<int64_t(int rank)> steps = [](int) { return 4; };
  std::function<bool(int rank, int64_t step)> branch = [](int, int64_t) { return true; };
  bool find_unused = false;
  bool join = false;
  bool shadow_steps = true;  // Join: joined ranks run the optimizer step too
  int64_t epochs = 1;
  bool accumulate = false;  // each step first accumulates epoch 1's rows under no_sync (epochs 1)
};

constexpr int64_t kMaxSteps = 8, kMaxRanks = 4;

void rows_of(int rank, int64_t epoch, int64_t step, Tensor& x, Tensor& y) {
  const int64_t samples = 2 * kMaxSteps * kMaxRanks * B;
  static const Tensor all_x = randn({samples, F}, 21, 0.0, 1.0, DType::float64);
  static const Tensor all_y = randn({samples, 1}, 22, 0.0, 1.0, DType::float64);
  const int64_t first = ((epoch * kMaxSteps + step) * kMaxRanks + rank) * B;
  x = empty({B, F}, DType::float64);
  y = empty({B, 1}, DType::float64);
  std::copy_n(all_x.data<double>() + first * F, B * F, x.data<double>());
  std::copy_n(all_y.data<double>() + first, B, y.data<double>());
}

std::vector<double> flatten(Module& model) {
  std::vector<double> out;
  for (const Tensor& p : model.parameters())
    for (double v : p.to_vector()) out.push_back(v);
  return out;
}

std::vector<double> train_ddp(const Plan& plan) {
  const int rank = world().rank();
  auto model = std::make_shared<SkippableBranch>();
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  ddp::DistributedDataParallel ddp(model, world_ptr(), {.find_unused_parameters = plan.find_unused});
  Tensor x, y;
  for (int64_t epoch = 0; epoch < plan.epochs; ++epoch) {
    std::optional<ddp::Join> join;
    if (plan.join) {
      ddp::JoinOptions options;
      if (plan.shadow_steps) options.on_shadow_step = [&sgd] { sgd.step(); };
      join.emplace(ddp, options);
    }
    for (int64_t step = 0; step < plan.steps(rank); ++step) {
      rows_of(rank, epoch, step, x, y);
      model->use_branch = plan.branch(rank, step);
      sgd.zero_grad();
      if (plan.accumulate) {
        Tensor micro_x, micro_y;
        rows_of(rank, 1, step, micro_x, micro_y);
        auto no_sync = ddp.no_sync();
        ddp.backward(mse_loss(ddp(micro_x), micro_y));
      }
      ddp.backward(mse_loss(ddp(x), y));
      sgd.step();
    }
    if (join) join->join();
  }
  return flatten(*model);
}

// One process: at each step the mean over the ranks that have a batch of their loss's gradient.
std::vector<double> train_reference(const Plan& plan) {
  const int N = world().size();
  auto model = std::make_shared<SkippableBranch>();
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  int64_t longest = 0;
  for (int r = 0; r < N; ++r) longest = std::max(longest, plan.steps(r));
  Tensor x, y;
  for (int64_t epoch = 0; epoch < plan.epochs; ++epoch) {
    for (int64_t step = 0; step < longest; ++step) {
      sgd.zero_grad();
      int contributing = 0;
      for (int r = 0; r < N; ++r) {
        if (step >= plan.steps(r)) continue;
        ++contributing;
        rows_of(r, epoch, step, x, y);
        model->use_branch = plan.branch(r, step);
        mse_loss((*model)(x), y).backward();  // gradients add up in .grad
        if (plan.accumulate) {
          rows_of(r, 1, step, x, y);
          mse_loss((*model)(x), y).backward();
        }
      }
      for (Tensor& p : model->parameters()) {
        Tensor grad = p.grad();
        if (grad.defined()) ops::scale_(grad, 1.0 / contributing);
      }
      sgd.step();
    }
  }
  return flatten(*model);
}

int64_t count_far(const std::vector<double>& got, const std::vector<double>& want) {
  int64_t far = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > 1e-12 * std::max(1.0, std::fabs(want[i]))) {
      if (far < 3) UNSCOPED_INFO("parameter element " << i << ": " << got[i] << " vs " << want[i]);
      ++far;
    }
  return far;
}

// Rank r skips the branch when (step + r) % 3 == 0: some ranks use it while others do not; and
// at step 3 every rank skips it (no rank used it: its .grad stays as zero_grad left it).
bool sometimes_skipped(int rank, int64_t step) { return step % 4 != 3 && (step + rank) % 3 != 0; }

}  // namespace

TEST_CASE("find_unused_parameters: a branch skipped on some ranks, or on all", "[ddp][unused]") {
  const Plan plan{.steps = [](int) { return 6; }, .branch = sometimes_skipped, .find_unused = true};
  REQUIRE(global_sum(count_far(train_ddp(plan), train_reference(plan))) == 0);
}

TEST_CASE("without find_unused_parameters a skipped parameter is named", "[ddp][unused][errors]") {
  auto model = std::make_shared<SkippableBranch>();
  ddp::DistributedDataParallel ddp(model, world_ptr());
  Tensor x, y;
  rows_of(world().rank(), 0, 0, x, y);
  model->use_branch = false;  // on every rank, so no rank waits on another's bucket
  const Tensor loss = mse_loss(ddp(x), y);
  REQUIRE_THROWS_WITH(
      ddp.backward(loss),
      Catch::Contains("parameter(s) branch.weight, branch.bias received no "
                      "gradient") &&
          Catch::Contains("find_unused_parameters = true") &&
          Catch::Contains("did not receive grad for rank " + std::to_string(world().rank()) + ": 2 3"));
}

TEST_CASE("a parameter found unused that still gets a gradient is named", "[ddp][unused][errors]") {
  auto model = std::make_shared<SkippableBranch>();
  ddp::DistributedDataParallel ddp(model, world_ptr(), {.find_unused_parameters = true});
  Tensor x, y;
  rows_of(world().rank(), 0, 0, x, y);
  model->use_branch = false;
  // The loss reaches branch.weight outside the module's forward, which the walk cannot see.
  const Tensor loss = add(mse_loss(ddp(x), y), mse_loss(linear(x, model->branch_weight()), y));
  REQUIRE_THROWS_WITH(ddp.backward(loss),
                      Catch::Contains("parameter 'branch.weight' got a gradient although the "
                                      "forward's output does not depend on it"));
}

TEST_CASE("Join: a forward without its backward is refused", "[ddp][join][errors]") {
  auto model = std::make_shared<SkippableBranch>();
  ddp::DistributedDataParallel ddp(model, world_ptr());
  ddp::Join join(ddp);
  Tensor x, y;
  rows_of(world().rank(), 0, 0, x, y);
  ddp(x);  // on every rank: no rank has issued a bucket's all-reduce yet
  REQUIRE_THROWS_WITH(join.join(), Catch::Contains("join() between a forward and its backward"));
  REQUIRE_THROWS_WITH(ddp(x), Catch::Contains("the previous forward with gradients enabled had no backward"));
}

TEST_CASE("Join: ranks with 3, 4 and 5 batches train as one process", "[ddp][join]") {
  const auto steps = [](int rank) -> int64_t { return 3 + rank % 3; };
  SECTION("joined ranks step their optimizer: two epochs, momentum kept equal") {
    const Plan plan{.steps = steps, .join = true, .epochs = 2};
    REQUIRE(global_sum(count_far(train_ddp(plan), train_reference(plan))) == 0);
  }
  SECTION("joined ranks only shadow: the last to join hands out its parameters") {
    const Plan plan{.steps = steps, .join = true, .shadow_steps = false};
    REQUIRE(global_sum(count_far(train_ddp(plan), train_reference(plan))) == 0);
  }
  SECTION("with find_unused_parameters and a branch skipped on some steps") {
    const Plan plan{
        .steps = steps, .branch = sometimes_skipped, .find_unused = true, .join = true, .epochs = 2};
    REQUIRE(global_sum(count_far(train_ddp(plan), train_reference(plan))) == 0);
  }
  SECTION("with gradient accumulation: a no_sync micro-step before each step") {
    const Plan plan{.steps = steps, .join = true, .accumulate = true};
    REQUIRE(global_sum(count_far(train_ddp(plan), train_reference(plan))) == 0);
  }
  SECTION("a rank with no batch at all") {
    const Plan plan{.steps = [](int rank) -> int64_t { return rank == 1 ? 0 : 3; }, .join = true};
    REQUIRE(global_sum(count_far(train_ddp(plan), train_reference(plan))) == 0);
  }
}

namespace {
// `name`: [v, v, ...] with every digit a double has, for tests/mpi/torch_join.py.
void write_values(std::FILE* file, const char* name, const std::vector<double>& values, bool last = false) {
  std::fprintf(file, "\"%s\": [", name);
  for (size_t i = 0; i < values.size(); ++i) std::fprintf(file, "%s%.17g", i ? ", " : "", values[i]);
  std::fprintf(file, "]%s\n", last ? "" : ",");
}
}  // namespace

// Not run by default: tests/mpi/torch_join.sh runs it, then PyTorch 1.13's DDP (gloo) with
// find_unused_parameters=True under Join(divide_by_initial_world_size=False) on the same data,
// initial weights and schedule (tests/mpi/torch_join.py), and compares the two. Rank 0 writes the
// data set and initial weights (data.json) and each case's final parameters (ringdp-CASE.json).
TEST_CASE("the cases compared with PyTorch", "[.torch]") {
  const char* folder = std::getenv("TORCH_COMPARE_DIR");
  REQUIRE(folder != nullptr);
  const std::string dir = folder;
  const bool writer = world().rank() == 0;
  if (writer) {
    std::FILE* file = std::fopen((dir + "/data.json").c_str(), "w");
    REQUIRE(file != nullptr);
    std::fprintf(file, "{\n");
    Tensor x, y;
    std::vector<double> xs, ys;
    for (int64_t epoch = 0; epoch < 2; ++epoch)
      for (int64_t step = 0; step < kMaxSteps; ++step)
        for (int rank = 0; rank < kMaxRanks; ++rank) {
          rows_of(rank, epoch, step, x, y);
          for (double v : x.to_vector()) xs.push_back(v);
          for (double v : y.to_vector()) ys.push_back(v);
        }
    write_values(file, "x", xs);
    write_values(file, "y", ys);
    SkippableBranch model;
    const auto named = model.named_parameters();
    for (size_t i = 0; i < named.size(); ++i)
      write_values(file, named[i].first.c_str(), named[i].second.to_vector(), i + 1 == named.size());
    std::fprintf(file, "}\n");
    std::fclose(file);
  }
  const auto steps = [](int rank) -> int64_t { return 3 + rank % 3; };
  // PyTorch's joined ranks do not step their optimizer: one epoch, or a stateless optimizer.
  const std::vector<std::pair<std::string, Plan>> cases = {
      {"unused",
       {.steps = [](int) { return 6; }, .branch = sometimes_skipped, .find_unused = true, .epochs = 2}},
      {"join", {.steps = steps, .find_unused = true, .join = true, .shadow_steps = false}},
      {"join-unused",
       {.steps = steps,
        .branch = sometimes_skipped,
        .find_unused = true,
        .join = true,
        .shadow_steps = false}},
  };
  for (const auto& [name, plan] : cases) {
    const std::vector<double> params = train_ddp(plan);
    if (!writer) continue;
    std::FILE* file = std::fopen((dir + "/ringdp-" + name + ".json").c_str(), "w");
    REQUIRE(file != nullptr);
    std::fprintf(file, "{\n");
    write_values(file, "parameters", params, true);
    std::fprintf(file, "}\n");
    std::fclose(file);
  }
}

// One GPU per rank, decided once (Communicator::device()), checked on two emulated GPUs: the
// product's communicator, trainer and CUDA transports, compiled as shipped, linked against the
// CPU emulator of the CUDA runtime (RINGDP_EMU_DEVICES=2, asynchronous streams) and the NCCL
// stand-in, under mpirun with two ranks. The emulator refuses a kernel, copy or NCCL call whose
// memory belongs to another device than its stream, and this suite's communicator lives in a
// static of tests/support/mpi_main.cpp that must be gone before the CUDA runtime shuts down.
// Run by tests/mpi/meson.build with RINGDP_BACKEND=mpi and =nccl, RINGDP_TEST_DEVICE=cuda.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "apps/train/trainer.h"
#include "kernels/device_memory.h"
#include "tests/support/mpi_test.h"

using namespace ringdp;
using ringdp::testing::world;

namespace {
std::string backend() {
  const char* b = std::getenv("RINGDP_BACKEND");
  return b && *b ? b : "auto";
}
}  // namespace

TEST_CASE("each rank computes and communicates on the GPU its local rank selects", "[placement]") {
  auto& w = world();
  const int gpus = kernels::cuda_device_count();
  REQUIRE(gpus == 2);  // RINGDP_EMU_DEVICES=2: the test is about more than one GPU
  const Device mine = w.device();
  REQUIRE(mine == Device::cuda(w.local_rank() % gpus));
  REQUIRE(testing::test_device() == mine);
  for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{1031}}) {
    Tensor t = zeros({count}, DType::float32, mine);
    testing::fill_input(t, w.rank(), ReduceOp::sum);
    w.all_reduce(t, ReduceOp::sum);
    CHECK(testing::global_sum(testing::count_wrong(t, w.size(), ReduceOp::sum)) == 0);
  }
  // A CUDA tensor on the other GPU: refused by the communicator before anything runs, naming both.
  Tensor elsewhere = zeros({8}, DType::float32, Device::cuda((mine.index + 1) % gpus));
  REQUIRE_THROWS_WITH(w.all_reduce(elsewhere),
                      Catch::Contains("got a tensor on " + elsewhere.device().str()) &&
                          Catch::Contains("communicates on " + mine.str()));
}

namespace {
// The trainer on the emulated GPU and on the CPU with `config`: the same parameters.
void train_on_both(train::TrainConfig config) {
  auto& w = world();
  config.backend = backend();
  config.device = "cuda";
  const std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  const std::string cuda_out = dir + "/ringdp-placement-" + backend() + "-cuda.json";
  config.export_path = cuda_out;
  REQUIRE(train::run_training(config, testing::world_ptr()) == 0);
  if (backend() == "nccl") return;  // NCCL carries CUDA tensors only: no CPU run to compare with
  config.device = "cpu";
  const std::string cpu_out = dir + "/ringdp-placement-" + backend() + "-cpu.json";
  config.export_path = cpu_out;
  REQUIRE(train::run_training(config, testing::world_ptr()) == 0);
  if (w.rank() != 0) return;  // rank 0 writes the exports
  const auto on_gpu = nlohmann::json::parse(std::ifstream(cuda_out));
  const auto on_cpu = nlohmann::json::parse(std::ifstream(cpu_out));
  REQUIRE(on_gpu.size() == on_cpu.size());
  double worst = 0;
  for (const auto& [name, tensor] : on_cpu.items()) {
    const auto& a = on_gpu.at(name).at("data");
    const auto& b = tensor.at("data");
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i)
      worst = std::max(worst, std::fabs(a[i].get<double>() - b[i].get<double>()) /
                                  std::max(1.0, std::fabs(b[i].get<double>())));
  }
  INFO("largest relative difference between the emulated-GPU and the CPU training: " << worst);
  CHECK(worst < 1e-5);
  std::remove(cuda_out.c_str());
  std::remove(cpu_out.c_str());
}
}  // namespace

TEST_CASE("ringdp-train's loop puts every rank's model and data on the communicator's GPU",
          "[placement][train]") {
  train::TrainConfig config;
  config.samples = 24;
  config.features = 6;
  config.epochs = 3;
  train_on_both(config);
  // ZeRO with Adam: flat buffers, reduce-scatter and all-gather on the GPU, and its state gathered
  // there into a checkpoint at every epoch.
  config.model = "mlp";
  config.optimizer = "adam";
  config.zero = true;
  const std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  config.checkpoint_path = dir + "/ringdp-placement-zero-" + backend() + ".ck";
  train_on_both(config);
  if (world().rank() == 0) std::remove(config.checkpoint_path.c_str());
}

TEST_CASE("--uneven join on the GPU: the counts, the joined rank's zeros and the divisor there",
          "[placement][train][join]") {
  // 13 rows: on 2 ranks 7 and 6, so with batches of 2 rank 1 shadows rank 0's fourth step.
  const std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  train::TrainConfig config;
  config.data_path = dir + "/ringdp-placement-join-" + backend() + ".csv";
  if (world().rank() == 0) {
    std::ofstream csv(config.data_path);
    csv << "a,b,y\n";
    for (int i = 0; i < 13; ++i) csv << i * 0.1 << "," << (i % 4) * 0.3 << "," << 1 + i * 0.05 << "\n";
  }
  world().barrier();
  config.model = "mlp";
  config.momentum = 0.9;
  config.batch_size = 2;
  config.epochs = 2;
  config.uneven = "join";
  config.find_unused_parameters = true;
  train_on_both(config);
  world().barrier();
  if (world().rank() == 0) std::remove(config.data_path.c_str());
}

// Hidden: run by the "device corrupt fault" tests with RINGDP_FAULT=corrupt:rank=1:op=2. The
// fault flips a bit of the first segment rank 1 receives in collective 2; on CUDA tensors it
// is done on the device, in stream order, where it was once silently skipped.
TEST_CASE("the corrupt fault reaches CUDA tensors", "[.fault]") {
  auto& w = world();
  REQUIRE(w.size() > 1);
  for (int op = 0; op < 4; ++op) {
    Tensor t = zeros({1031}, DType::float32, w.device());
    testing::fill_input(t, w.rank(), ReduceOp::sum);
    w.all_reduce(t, ReduceOp::sum, {.algorithm = comm::Algorithm::ring});
    const int64_t wrong = testing::global_sum(testing::count_wrong(t, w.size(), ReduceOp::sum));
    CAPTURE(op, wrong);
    CHECK((op == 2 ? wrong > 0 : wrong == 0));
  }
}

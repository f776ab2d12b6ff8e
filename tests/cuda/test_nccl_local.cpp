// NCCL at world size 1 (no mpirun needed): every collective and algorithm on CUDA tensors over
// the NCCL transport, with native calls going to NCCL itself. With one rank every reduction is
// the identity, so the checks are exact; what this proves is the NCCL bootstrap, the stream
// ordering against the compute stream, and the device-pointer paths. Multi-rank NCCL and the
// MPI fallback for CUDA tensors run from tests/gpu/device_check.sh with mpirun.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "comm/communicator.h"
#include "kernels/device_memory.h"

using namespace ringdp;
using comm::Algorithm;

TEST_CASE("every collective over NCCL at world size 1", "[cuda][nccl]") {
  comm::CommOptions options;
  options.backend = "nccl";
  options.force_local = true;
  auto world = comm::Communicator::init(options);
  const Device gpu = world->device();
  for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64, DType::bfloat16}) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{1031}, int64_t{1000003}}) {
      CAPTURE(dtype_name(dtype), count);
      const Tensor values = rand({count}, 7, -100, 100, DType::float64).to(dtype);
      const auto want = values.to_vector();
      for (Algorithm algo :
           {Algorithm::ring, Algorithm::recursive_doubling, Algorithm::native, Algorithm::automatic}) {
        Tensor t = values.to(gpu);
        world->all_reduce(t, ReduceOp::sum, {.algorithm = algo});
        CHECK(t.to_vector() == want);
        Tensor out = zeros({count}, dtype, gpu);
        world->all_reduce(values.to(gpu), out, ReduceOp::max, {.algorithm = algo});
        CHECK(out.to_vector() == want);
      }
      for (Algorithm algo : {Algorithm::tree, Algorithm::native}) {
        Tensor t = values.to(gpu);
        world->reduce(t, 0, ReduceOp::min, {.algorithm = algo});
        CHECK(t.to_vector() == want);
        Tensor b = values.to(gpu);
        world->broadcast(b, 0, {.algorithm = algo});
        CHECK(b.to_vector() == want);
      }
      for (Algorithm algo : {Algorithm::ring, Algorithm::native}) {
        Tensor gathered = zeros({count}, dtype, gpu), scattered = zeros({count}, dtype, gpu);
        world->all_gather(values.to(gpu), gathered, {.algorithm = algo});
        world->reduce_scatter(values.to(gpu), scattered, ReduceOp::sum, {.algorithm = algo});
        CHECK(gathered.to_vector() == want);
        CHECK(scattered.to_vector() == want);
      }
    }
  }
  world->barrier();
  Tensor host = zeros({4});
  REQUIRE_THROWS_WITH(world->all_reduce(host), Catch::Contains("--backend nccl needs CUDA tensors"));
}

int main(int argc, char** argv) {
  if (kernels::cuda_device_count() == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}

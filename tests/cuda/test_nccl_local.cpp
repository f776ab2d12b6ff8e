// NCCL at world size 1 (no mpirun needed): every collective and algorithm on CUDA tensors over
// the NCCL transport, with native calls going to NCCL itself. With one rank every reduction is
// the identity, so the checks are exact; what this proves is the NCCL bootstrap, the stream
// ordering against the compute stream, and the device-pointer paths. Multi-rank NCCL and the
// MPI fallback for CUDA tensors run from tests/gpu/device_check.sh with mpirun.
#include <catch2/catch.hpp>

#include <cstdio>

#include <chrono>
#include <vector>

#include "comm/communicator.h"
#include "comm/transport/cuda/nccl_transport.h"
#include "kernels/device_memory.h"
#include "tests/support/catch_session.h"

using namespace ringdp;
using comm::Algorithm;

TEST_CASE("every collective over NCCL at world size 1", "[cuda][nccl]") {
  comm::CommOptions options;
  options.backend = comm::Backend::nccl;
  options.force_local = true;
  auto world = comm::Communicator::init(options);
  const Device gpu = world->device();
  for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64, DType::bfloat16,
                      DType::float16, DType::int8, DType::uint8, DType::boolean}) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{1031}, int64_t{1000003}}) {
      CAPTURE(dtype_name(dtype), count);
      const double low = dtype == DType::uint8 ? 0 : -100;  // a negative double cast to uint8 is undefined
      const Tensor values = rand({count}, 7, low, 100, DType::float64).to(dtype);
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
      // The block collectives: ringdp's (tree, pairwise, ring) and NCCL's grouped sends and
      // receives, each the identity on one rank, out of place and (all_to_all) in place.
      for (Algorithm algo : {Algorithm::tree, Algorithm::native}) {
        Tensor gathered = zeros({count}, dtype, gpu), scattered = zeros({count}, dtype, gpu);
        world->gather(values.to(gpu), gathered, 0, {.algorithm = algo});
        world->scatter(values.to(gpu), scattered, 0, {.algorithm = algo});
        CHECK(gathered.to_vector() == want);
        CHECK(scattered.to_vector() == want);
      }
      for (Algorithm algo : {Algorithm::pairwise, Algorithm::native}) {
        Tensor exchanged = zeros({count}, dtype, gpu), in_place = values.to(gpu),
               uneven = zeros({count}, dtype, gpu);
        world->all_to_all(values.to(gpu), exchanged, {.algorithm = algo});
        world->all_to_all(in_place, in_place, {.algorithm = algo});
        const int64_t counts[1] = {count};
        world->all_to_all(values.to(gpu), counts, uneven, counts, {.algorithm = algo});
        Tensor gathered = zeros({count}, dtype, gpu);
        // The uneven all_gather's own is the ring.
        world->all_gather(values.to(gpu), gathered, counts,
                          {.algorithm = algo == Algorithm::native ? algo : Algorithm::ring});
        CHECK(exchanged.to_vector() == want);
        CHECK(in_place.to_vector() == want);
        CHECK(uneven.to_vector() == want);
        CHECK(gathered.to_vector() == want);
      }
    }
  }
  world->barrier();
  Tensor host = zeros({4});
  REQUIRE_THROWS_WITH(world->all_reduce(host), Catch::Contains("--backend nccl needs CUDA tensors"));
}

TEST_CASE("a ring step sent to itself goes through NCCL's send/receive path", "[cuda][nccl][p2p]") {
  // At world size 1 the algorithms send nothing and NCCL runs collectives without its proxy, so
  // the test above passes even if ringdp drives NCCL's groups wrongly. Here every step sends
  // rank 0's segments to rank 0 in one group per segment (isend/irecv, then reduce_into, as the
  // ring does), several steps in a row: the non-blocking group protocol of nccl_transport.h.
  const Device gpu = Device::cuda(0);
  comm::NcclTransport nccl(
      0, 1, 0, [](void*, size_t) {}, std::chrono::seconds(60));
  nccl.set_deadline(comm::Transport::Clock::now() + std::chrono::seconds(60), [] {
    std::fprintf(stderr, "test_nccl_local: the send-to-self steps exceeded 60 s\n");
    std::abort();
  });
  const int64_t count = 100003, segment = 4096, steps = 6;
  const Tensor source = rand({count}, 11, -8, 8, DType::float64).to(DType::float32);
  Tensor input = source.to(gpu), received = zeros({count}, DType::float32, gpu);
  Tensor total = zeros({count}, DType::float32, gpu);
  nccl.activate();
  std::vector<comm::Request> requests;
  for (int step = 0; step < steps; ++step) {
    requests.clear();
    for (int64_t off = 0; off < count; off += segment) {
      const size_t bytes = static_cast<size_t>(std::min(segment, count - off)) * sizeof(float);
      requests.push_back(nccl.irecv(0, static_cast<float*>(received.data_ptr()) + off, bytes, step));
      requests.push_back(nccl.isend(0, static_cast<const float*>(input.data_ptr()) + off, bytes, step));
    }
    for (size_t k = 0; k < requests.size(); k += 2) {
      nccl.wait(requests[k]);
      const int64_t off = static_cast<int64_t>(k / 2) * segment;
      nccl.reduce_into(static_cast<float*>(total.data_ptr()) + off,
                       static_cast<float*>(received.data_ptr()) + off, std::min(segment, count - off),
                       DType::float32, ReduceOp::sum);
    }
    nccl.wait_all(requests);
  }
  nccl.synchronize();
  const auto got = total.to_vector(), values = source.to_vector();
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    float want = 0;  // the same additions in the same order, in float
    for (int step = 0; step < steps; ++step) want += static_cast<float>(values[i]);
    if (got[i] != want && wrong++ < 3) UNSCOPED_INFO("element " << i << ": " << got[i] << " vs " << want);
  }
  CHECK(wrong == 0);
}

int main(int argc, char** argv) {
  if (kernels::cuda_device_count() == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return 77;
  }
  return ringdp::testing::catch_parse_and_run(argc, argv);
}

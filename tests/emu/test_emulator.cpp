// Tests of the CUDA emulator itself: kernels that are right only if barriers, shared memory and
// warp shuffles behave as on a GPU, and kernels that are wrong in ways the emulator must report.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <numeric>
#include <vector>

#include "kernels/cuda/launch.h"

namespace {

// Each thread writes its index, then reads its neighbour's: right only with the barrier.
__global__ void rotate_kernel(const int* in, int* out, bool use_barrier) {
  __shared__ int tile[256];
  const int t = threadIdx.x;
  tile[t] = in[blockIdx.x * blockDim.x + t];
  if (use_barrier) __syncthreads();
  out[blockIdx.x * blockDim.x + t] = tile[(t + 1) % blockDim.x];
}

// Block sum through shared memory, tree order.
__global__ void block_sum_kernel(const float* in, float* out) {
  __shared__ float partial[128];
  const int t = threadIdx.x;
  partial[t] = in[blockIdx.x * 128 + t];
  __syncthreads();
  for (int stride = 64; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

// Warp sum with shuffles, then lane 0 of each warp adds into the total.
__global__ void warp_sum_kernel(const int* in, int* out) {
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) atomicAdd(out, v);
  const unsigned odd = __ballot_sync(0xffffffffu, threadIdx.x % 2);
  if (threadIdx.x == 0) atomicAdd(out + 1, static_cast<int>(odd == 0xaaaaaaaau));
}

// Reverses a block's slice through dynamic shared memory sized at launch.
__global__ void reverse_kernel(const int* in, int* out) {
  RINGDP_DYNAMIC_SHARED(int, tile);
  const int t = threadIdx.x, n = blockDim.x;
  tile[t] = in[blockIdx.x * n + t];
  __syncthreads();
  out[blockIdx.x * n + t] = tile[n - 1 - t];
}

// Thread 0 leaves early: the others wait at a barrier it never reaches.
__global__ void divergent_kernel(int* out) {
  if (threadIdx.x == 0) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

}  // namespace

TEST_CASE("barriers order shared-memory writes before reads", "[emu]") {
  std::vector<int> in(512), out(512, -1);
  std::iota(in.begin(), in.end(), 0);
  RINGDP_LAUNCH(2, 256, 0, nullptr, rotate_kernel)(in.data(), out.data(), true);
  for (int i = 0; i < 512; ++i) REQUIRE(out[i] == (i / 256) * 256 + (i % 256 + 1) % 256);
  // Without the barrier thread t reads its neighbour's slot before the neighbour has run.
  RINGDP_LAUNCH(2, 256, 0, nullptr, rotate_kernel)(in.data(), out.data(), false);
  int wrong = 0;
  for (int i = 0; i < 512; ++i) wrong += out[i] != (i / 256) * 256 + (i % 256 + 1) % 256;
  CHECK(wrong > 0);
}

TEST_CASE("a block reduction through shared memory", "[emu]") {
  std::vector<float> in(128 * 3), out(3, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 17);
  RINGDP_LAUNCH(3, 128, 0, nullptr, block_sum_kernel)(in.data(), out.data());
  for (int b = 0; b < 3; ++b) {
    float want = 0;
    for (int i = 0; i < 128; ++i) want += in[b * 128 + i];
    CHECK(out[b] == want);
  }
}

TEST_CASE("warp shuffles and ballots have warp-lockstep semantics", "[emu]") {
  std::vector<int> in(256), out(2, 0);
  std::iota(in.begin(), in.end(), 1);
  RINGDP_LAUNCH(1, 256, 0, nullptr, warp_sum_kernel)(in.data(), out.data());
  CHECK(out[0] == 256 * 257 / 2);
  CHECK(out[1] == 1);
}

TEST_CASE("dynamic shared memory is sized by the launch", "[emu]") {
  std::vector<int> in(3 * 96), out(3 * 96, 0);
  std::iota(in.begin(), in.end(), 0);
  RINGDP_LAUNCH(3, 96, 96 * sizeof(int), nullptr, reverse_kernel)(in.data(), out.data());
  for (int i = 0; i < 3 * 96; ++i) REQUIRE(out[i] == (i / 96) * 96 + 95 - i % 96);
}

TEST_CASE("a divergent barrier is an error naming kernel, block and thread", "[emu]") {
  std::vector<int> out(64, 0);
  REQUIRE_THROWS_WITH(RINGDP_LAUNCH(1, 64, 0, nullptr, divergent_kernel)(out.data()),
                      Catch::Contains("divergent __syncthreads()") && Catch::Contains("kernel divergent_kernel") &&
                          Catch::Contains("block (0,0,0), thread (0,0,0) returned"));
}

TEST_CASE("more than 1024 threads per block is an error", "[emu]") {
  std::vector<float> in(2048), out(1);
  REQUIRE_THROWS_WITH(RINGDP_LAUNCH(1, 2048, 0, nullptr, block_sum_kernel)(in.data(), out.data()),
                      Catch::Contains("2048 threads per block"));
}

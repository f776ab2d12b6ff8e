// Tests of the CUDA emulator itself: kernels that are right only if barriers, shared memory and
// warp shuffles behave as on a GPU, and kernels that are wrong in ways the emulator must report.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <numeric>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/linear.h"

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

// Declares a bound of 64 threads: a launch of more is refused, as a GPU refuses it.
__global__ void __launch_bounds__(64) bounded_kernel(int* out) { out[threadIdx.x] = 1; }

// Indexes a [4][8] shared array at (row, col) from thread 0: in bounds only for row < 4, col < 8.
__global__ void index_kernel(int row, int col, float* out) {
  __shared__ float grid2[4][8];
  if (threadIdx.x == 0) {
    grid2[row][col] = 1.0f;
    *out = grid2[row][col];
  }
}

// Every thread writes slot 0 in the same barrier interval.
__global__ void write_write_kernel() {
  __shared__ int slot[1];
  slot[0] = static_cast<int>(threadIdx.x);
}

// Reads the neighbour's slot after the barrier, then overwrites its own without a second one.
__global__ void write_after_read_kernel(int* out) {
  __shared__ int tile[64];
  const int t = threadIdx.x;
  tile[t] = t;
  __syncthreads();
  out[t] = tile[(t + 1) % 64];
  tile[t] = -t;
}

// Lanes exchange through shared memory: ordered by __syncwarp within a warp, a race without it.
__global__ void warp_exchange_kernel(int* out, bool use_syncwarp) {
  __shared__ int lanes[32];
  const int t = threadIdx.x;
  lanes[t] = t * 10;
  if (use_syncwarp) __syncwarp();
  out[t] = lanes[t ^ 1];
}

}  // namespace

TEST_CASE("barriers order shared-memory writes before reads", "[emu]") {
  std::vector<int> in(512), out(512, -1);
  std::iota(in.begin(), in.end(), 0);
  RINGDP_LAUNCH(2, 256, 0, nullptr, rotate_kernel)(in.data(), out.data(), true);
  for (int i = 0; i < 512; ++i) REQUIRE(out[i] == (i / 256) * 256 + (i % 256 + 1) % 256);
  // Without the barrier thread t reads its neighbour's slot before the neighbour has run: the
  // checked mode says so; unchecked, the result is wrong, as on a GPU.
  REQUIRE_THROWS_WITH(RINGDP_LAUNCH(2, 256, 0, nullptr, rotate_kernel)(in.data(), out.data(), false),
                      Catch::Contains("read of uninitialised shared memory tile[1]") &&
                          Catch::Contains("kernel rotate_kernel, block (0,0,0), thread (0,0,0)"));
  ringdp::doubles::set_racecheck(false);
  RINGDP_LAUNCH(2, 256, 0, nullptr, rotate_kernel)(in.data(), out.data(), false);
  ringdp::doubles::set_racecheck(true);
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
                      Catch::Contains("divergent __syncthreads()") &&
                          Catch::Contains("kernel divergent_kernel") &&
                          Catch::Contains("block (0,0,0), thread (0,0,0) returned"));
}

TEST_CASE("a launch of more than 1024 threads per block fails as CUDA's does", "[emu]") {
  // CUDA launches nothing and leaves cudaErrorInvalidConfiguration for cudaGetLastError, which
  // resets it; nothing throws. RINGDP_CUDA_CHECK_LAUNCH turns it into an error naming the kernel.
  std::vector<float> in(2048, 1.0f), out(1, -1.0f);
  RINGDP_LAUNCH(1, 2048, 0, nullptr, block_sum_kernel)(in.data(), out.data());
  cudaDeviceSynchronize();
  CHECK(out[0] == -1.0f);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  CHECK(cudaGetLastError() == cudaSuccess);
  RINGDP_LAUNCH(1, 2048, 0, nullptr, block_sum_kernel)(in.data(), out.data());
  const auto check_launch = [] { RINGDP_CUDA_CHECK_LAUNCH(block_sum_kernel); };
  REQUIRE_THROWS_WITH(check_launch(), Catch::Contains("launch of CUDA kernel `block_sum_kernel` failed") &&
                                          Catch::Contains("cudaErrorInvalidConfiguration"));
  RINGDP_LAUNCH(1, 128, 0, nullptr, block_sum_kernel)(in.data(), out.data());
  REQUIRE_NOTHROW(check_launch());
  cudaDeviceSynchronize();
  CHECK(out[0] == 128.0f);
}

TEST_CASE("a launch beyond the kernel's __launch_bounds__ is an error", "[emu]") {
  std::vector<int> out(128, 0);
  RINGDP_LAUNCH(1, 64, 0, nullptr, bounded_kernel)(out.data());
  CHECK(out[63] == 1);
  REQUIRE_THROWS_WITH(RINGDP_LAUNCH(1, 128, 0, nullptr, bounded_kernel)(out.data()),
                      Catch::Contains("128 threads per block exceeds the kernel's __launch_bounds__(64)") &&
                          Catch::Contains("kernel bounded_kernel, block (0,0,0), thread (0,0,0)"));
}

TEST_CASE("a shared-memory index out of its dimension is an error in every build", "[emu]") {
  float out = 0;
  RINGDP_LAUNCH(1, 32, 0, nullptr, index_kernel)(3, 7, &out);
  CHECK(out == 1.0f);
  REQUIRE_THROWS_WITH(
      RINGDP_LAUNCH(1, 32, 0, nullptr, index_kernel)(4, 0, &out),
      Catch::Contains("index 4 out of bounds in dimension 1 of grid2[4][8] (valid: 0 to 3)") &&
          Catch::Contains("kernel index_kernel, block (0,0,0), thread (0,0,0)"));
  // grid2[0][8] is grid2[1][0] in memory, but not in C++ nor in the kernel's intent.
  REQUIRE_THROWS_WITH(RINGDP_LAUNCH(1, 32, 0, nullptr, index_kernel)(0, 8, &out),
                      Catch::Contains("index 8 out of bounds in dimension 2 of grid2[4][8]"));
  REQUIRE_THROWS_WITH(RINGDP_LAUNCH(1, 32, 0, nullptr, index_kernel)(-1, 0, &out),
                      Catch::Contains("index -1"));
  // Dynamic shared memory is bounded by the launch's byte count: 96 threads, room for 48 ints.
  std::vector<int> in(96), rev(96);
  REQUIRE_THROWS_WITH(RINGDP_LAUNCH(1, 96, 48 * sizeof(int), nullptr, reverse_kernel)(in.data(), rev.data()),
                      Catch::Contains("index 48 out of bounds in dimension 1 of tile[48]") &&
                          Catch::Contains("thread (48,0,0)"));
}

TEST_CASE("checked mode reports shared-memory races naming both threads", "[emu]") {
  REQUIRE(ringdp::doubles::racecheck());
  REQUIRE_THROWS_WITH(
      RINGDP_LAUNCH(2, 32, 0, nullptr, write_write_kernel)(),
      Catch::Contains("shared-memory race (write after write) on slot[0] in kernel write_write_kernel, "
                      "block (0,0,0): thread (0,0,0) wrote it and thread (1,0,0) writes it"));
  std::vector<int> out(64);
  REQUIRE_THROWS_WITH(RINGDP_LAUNCH(1, 64, 0, nullptr, write_after_read_kernel)(out.data()),
                      Catch::Contains("race (write after read) on tile[1]") &&
                          Catch::Contains("thread (0,0,0) read it and thread (1,0,0) writes it"));
  // Read after write: lane 1 wrote lanes[1] before lane 0 reads it, nothing ordering the two.
  ringdp::doubles::set_racecheck(false);
  RINGDP_LAUNCH(1, 32, 0, nullptr, write_after_read_kernel)(out.data());  // unchecked: runs
  ringdp::doubles::set_racecheck(true);
}

TEST_CASE("__syncwarp orders shared memory within a warp, and only there", "[emu]") {
  std::vector<int> out(32, -1);
  RINGDP_LAUNCH(1, 32, 0, nullptr, warp_exchange_kernel)(out.data(), true);
  for (int t = 0; t < 32; ++t) REQUIRE(out[t] == (t ^ 1) * 10);
  REQUIRE_THROWS_WITH(RINGDP_LAUNCH(1, 32, 0, nullptr, warp_exchange_kernel)(out.data(), false),
                      Catch::Contains("shared-memory race (read after write) on lanes[0]") ||
                          Catch::Contains("uninitialised shared memory lanes[1]"));
}

TEST_CASE("the emulator runs the next launch normally after a failed one", "[emu]") {
  float out = 0;
  CHECK_THROWS(RINGDP_LAUNCH(1, 32, 0, nullptr, index_kernel)(9, 0, &out));
  RINGDP_LAUNCH(1, 32, 0, nullptr, index_kernel)(1, 1, &out);
  CHECK(out == 1.0f);
}

namespace {
__global__ void fill_kernel(float* out, float value) { out[threadIdx.x] = value; }

// Two emulated devices for one test case; back to one (and device 0) after it.
struct TwoDevices {
  TwoDevices() { ringdp::doubles::set_device_count(2); }
  ~TwoDevices() {
    cudaSetDevice(0);
    ringdp::doubles::set_device_count(1);
  }
};
}  // namespace

TEST_CASE("memory, streams and events belong to the device current when they were made", "[emu][devices]") {
  TwoDevices two;
  int count = 0;
  cudaGetDeviceCount(&count);
  REQUIRE(count == 2);
  REQUIRE(cudaSetDevice(2) == cudaErrorInvalidDevice);
  CHECK_THAT(cudaGetErrorString(cudaErrorInvalidDevice), Catch::Contains("the emulator has 2 device(s)"));
  float *on0 = nullptr, *on1 = nullptr;
  cudaStream_t stream0 = nullptr, stream1 = nullptr;
  cudaEvent_t event0 = nullptr;
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudaMalloc(reinterpret_cast<void**>(&on0), 32 * sizeof(float));
  cudaStreamCreateWithFlags(&stream0, cudaStreamNonBlocking);
  cudaEventCreateWithFlags(&event0, cudaEventDisableTiming);
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  cudaMalloc(reinterpret_cast<void**>(&on1), 32 * sizeof(float));
  cudaStreamCreateWithFlags(&stream1, cudaStreamNonBlocking);
  CHECK(ringdp::doubles::device_of(on0, 4) == 0);
  CHECK(ringdp::doubles::device_of(on1, 4) == 1);

  // A kernel on device 1's stream with device 0's memory: refused at launch, naming both.
  RINGDP_LAUNCH(1, 32, 0, stream1, fill_kernel)(on0, 1.0f);
  const auto check_launch = [] { RINGDP_CUDA_CHECK_LAUNCH(fill_kernel); };
  REQUIRE_THROWS_WITH(check_launch(), Catch::Contains("fill_kernel") && Catch::Contains("stream of cuda:1") &&
                                          Catch::Contains("memory of cuda:0"));
  // The default stream is the current device's (1 now).
  RINGDP_LAUNCH(1, 32, 0, nullptr, fill_kernel)(on0, 1.0f);
  REQUIRE_THROWS_WITH(check_launch(), Catch::Contains("stream of cuda:1"));
  RINGDP_LAUNCH(1, 32, 0, stream1, fill_kernel)(on1, 2.0f);
  REQUIRE_NOTHROW(check_launch());

  // Asynchronous copies and sets run on their stream's device.
  CHECK(cudaMemcpyAsync(on1, on0, 32 * sizeof(float), cudaMemcpyDeviceToDevice, stream1) ==
        cudaErrorInvalidDevice);
  CHECK_THAT(cudaGetErrorString(cudaErrorInvalidDevice),
             Catch::Contains("cudaMemcpyAsync on cuda:1") && Catch::Contains("source memory of cuda:0"));
  CHECK(cudaMemsetAsync(on0, 0, 4, stream1) == cudaErrorInvalidDevice);
  CHECK(cudaMemsetAsync(on0, 0, 4, stream0) == cudaSuccess);
  // Synchronous copies go by the pointers (unified addressing), but never device to device across.
  std::vector<float> host(32, 0.0f);
  CHECK(cudaMemcpy(host.data(), on0, 32 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(cudaMemcpy(on1, on0, 32 * sizeof(float), cudaMemcpyDeviceToDevice) == cudaErrorInvalidDevice);
  // An event of device 0 recorded on device 1's stream fails, as in CUDA.
  CHECK(cudaEventRecord(event0, stream1) == cudaErrorInvalidResourceHandle);
  CHECK(cudaEventRecord(event0, stream0) == cudaSuccess);
  cudaDeviceSynchronize();
  CHECK(cudaMemcpy(host.data(), on1, 32 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(host[31] == 2.0f);
  cudaEventDestroy(event0);
  cudaStreamDestroy(stream0);
  cudaStreamDestroy(stream1);
  cudaFree(on0);
  cudaFree(on1);
}

TEST_CASE("a GEMM over more row tiles than gridDim.y can number still launches", "[emu][linear]") {
  // CUDA allows 65535 blocks in y and z, 2^31 - 1 in x. Launch only: the streams are deferred
  // and stalled, and the queued launch is dropped unrun (emulated, it would take hours).
  for (auto [dtype, rows] : {std::pair{ringdp::DType::float32, 65535LL * 128 + 1},
                             std::pair{ringdp::DType::float64, 65535LL * 16 + 1}}) {
    CAPTURE(ringdp::dtype_name(dtype), rows);
    const size_t bytes = static_cast<size_t>(rows) * ringdp::dtype_size(dtype);
    void *x = nullptr, *w = nullptr, *y = nullptr;
    cudaMalloc(&x, bytes);
    cudaMalloc(&w, 8);
    cudaMalloc(&y, bytes);
    ringdp::doubles::set_deferred_streams(true);
    ringdp::doubles::stall_streams(true);
    CHECK_NOTHROW(ringdp::kernels::linear_forward_cuda(x, w, nullptr, y, rows, 1, 1, dtype, nullptr));
    // The backward GEMM for dW has the output features as rows and the input features as columns.
    CHECK_NOTHROW(ringdp::kernels::linear_backward_cuda(y, x, w, x, w, nullptr, rows, 1, 1, dtype, nullptr));
    ringdp::doubles::discard_streams();
    ringdp::doubles::stall_streams(false);
    ringdp::doubles::set_deferred_streams(false);
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
  }
  // Columns stay on y: past its limit the error names it (not an opaque launch failure).
  const int64_t columns = 65535LL * 128 + 1;
  void *x = nullptr, *w = nullptr, *y = nullptr;
  cudaMalloc(&x, 4);
  cudaMalloc(&w, columns * 4);
  cudaMalloc(&y, columns * 4);
  REQUIRE_THROWS_WITH(
      ringdp::kernels::linear_forward_cuda(x, w, nullptr, y, 1, 1, columns, ringdp::DType::float32, nullptr),
      Catch::Contains("8388481 output columns") && Catch::Contains("gridDim.y allows 65535"));
  cudaFree(x);
  cudaFree(w);
  cudaFree(y);
}

// The copies' rules of the file comment in tests/doubles/cuda/runtime.cpp, as CUDA documents them for
// non-blocking streams (every emulated stream is one): each is what a host staging copy relies on
// (comm/execution/host_staging.h), and each check fails against the emulator as it was before.
TEST_CASE("synchronous and asynchronous copies keep CUDA's order for pageable and pinned memory",
          "[emu][streams]") {
  using ringdp::doubles::StreamOrder;
  ringdp::doubles::set_deferred_streams(true);
  ringdp::doubles::set_stream_order(StreamOrder::oldest_first);
  cudaStream_t side = nullptr;
  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  float* device = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&device), sizeof(float));
  float* pinned = nullptr;
  cudaMallocHost(reinterpret_cast<void**>(&pinned), sizeof(float));
  std::vector<float> host{1.0f};
  cudaMemcpy(device, host.data(), sizeof(float), cudaMemcpyHostToDevice);
  cudaDeviceSynchronize();

  SECTION("a synchronous copy waits for the default stream, not for another stream") {
    host[0] = 2.0f;
    cudaMemcpyAsync(device, host.data(), sizeof(float), cudaMemcpyHostToDevice, side);
    float seen = 0;
    cudaMemcpy(&seen, device, sizeof(float), cudaMemcpyDeviceToHost);
    CHECK(seen == 1.0f);
    cudaStreamSynchronize(side);
    cudaMemcpy(&seen, device, sizeof(float), cudaMemcpyDeviceToHost);
    CHECK(seen == 2.0f);
  }
  SECTION("a synchronous copy from pageable memory may land after it returns, on the default stream") {
    ringdp::doubles::set_stream_order(StreamOrder::newest_first);
    host[0] = 3.0f;
    cudaMemcpy(device, host.data(), sizeof(float), cudaMemcpyHostToDevice);
    host[0] = 4.0f;  // taken already: never seen on the device
    float seen = 0;
    cudaMemcpyAsync(&seen, device, sizeof(float), cudaMemcpyDeviceToHost, side);
    CHECK(seen == 1.0f);  // the side stream did not wait for the default one
    cudaDeviceSynchronize();
    cudaMemcpy(&seen, device, sizeof(float), cudaMemcpyDeviceToHost);
    CHECK(seen == 3.0f);
  }
  SECTION("an asynchronous copy takes pageable bytes at the call, pinned ones when it runs") {
    host[0] = 5.0f;
    cudaMemcpyAsync(device, host.data(), sizeof(float), cudaMemcpyHostToDevice, side);
    host[0] = 6.0f;
    cudaStreamSynchronize(side);
    float seen = 0;
    cudaMemcpy(&seen, device, sizeof(float), cudaMemcpyDeviceToHost);
    CHECK(seen == 5.0f);
    *pinned = 7.0f;
    cudaMemcpyAsync(device, pinned, sizeof(float), cudaMemcpyHostToDevice, side);
    *pinned = 8.0f;
    cudaStreamSynchronize(side);
    cudaMemcpy(&seen, device, sizeof(float), cudaMemcpyDeviceToHost);
    CHECK(seen == 8.0f);
  }
  SECTION("an asynchronous copy into pageable memory returns once the bytes are there, into pinned later") {
    float seen = 0;
    cudaMemcpyAsync(&seen, device, sizeof(float), cudaMemcpyDeviceToHost, side);
    CHECK(seen == 1.0f);
    *pinned = 0.0f;
    cudaMemcpyAsync(pinned, device, sizeof(float), cudaMemcpyDeviceToHost, side);
    CHECK(*pinned == 0.0f);
    cudaStreamSynchronize(side);
    CHECK(*pinned == 1.0f);
  }
  cudaDeviceSynchronize();
  ringdp::doubles::set_stream_order(StreamOrder::round_robin);
  ringdp::doubles::set_deferred_streams(false);
  cudaFreeHost(pinned);
  cudaFree(device);
  cudaStreamDestroy(side);
}

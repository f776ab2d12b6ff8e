// RINGDP_CUDA_CHECK for every CUDA runtime call, RINGDP_CUDA_CHECK_LAUNCH after every kernel launch.
// The message names the statement, file:line and CUDA's own error string.
#pragma once

#include <cuda_runtime.h>

#include "core/error.h"

namespace ringdp::kernels {
/// Throws ringdp::Error naming the statement, file:line and CUDA's own error string.
[[noreturn]] void cuda_failure(cudaError_t status, const char* call, const char* file, int line);
}  // namespace ringdp::kernels

// The three library checks (RINGDP_CUDA_CHECK, RINGDP_MPI_CHECK, RINGDP_NCCL_CHECK) have one
// shape: the return code tested in place, a cold out-of-line call only on failure.
#define RINGDP_CUDA_CHECK(call)                                                       \
  do {                                                                                \
    const cudaError_t ringdp_cuda_status = (call);                                    \
    if (__builtin_expect(ringdp_cuda_status != cudaSuccess, 0))                       \
      ::ringdp::kernels::cuda_failure(ringdp_cuda_status, #call, __FILE__, __LINE__); \
  } while (0)

// A launch reports a bad configuration (block size, grid, shared memory) only through
// cudaGetLastError; the message names the kernel, since the statement itself says nothing.
#define RINGDP_CUDA_CHECK_LAUNCH(kernel_name)                                 \
  do {                                                                        \
    const cudaError_t ringdp_launch_status = cudaGetLastError();              \
    if (ringdp_launch_status != cudaSuccess) {                                \
      RINGDP_FAIL("launch of CUDA kernel `", #kernel_name,                    \
                  "` failed: ", cudaGetErrorName(ringdp_launch_status), ": ", \
                  cudaGetErrorString(ringdp_launch_status));                  \
    }                                                                         \
  } while (0)

namespace ringdp::kernels {

/// Blocks and threads for a grid-stride loop over n elements.
inline unsigned grid_for(long long n, unsigned block) {
  long long blocks = (n + block - 1) / block;
  if (blocks < 1) blocks = 1;
  if (blocks > 65535LL * 8) blocks = 65535LL * 8;
  return static_cast<unsigned>(blocks);
}

}  // namespace ringdp::kernels

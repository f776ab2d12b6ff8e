// CUDA_CHECK for every CUDA runtime call, RINGDP_CUDA_CHECK_LAUNCH after every kernel launch.
// The message names the statement, file:line and CUDA's own error string.
#pragma once

#include <cuda_runtime.h>

#include "kernels/error.h"

#define CUDA_CHECK(call)                                                                          \
  do {                                                                                            \
    const cudaError_t ringdp_cuda_status = (call);                                                \
    if (ringdp_cuda_status != cudaSuccess) {                                                      \
      RINGDP_FAIL("CUDA call `", #call, "` failed: ", cudaGetErrorName(ringdp_cuda_status), ": ", \
                  cudaGetErrorString(ringdp_cuda_status));                                        \
    }                                                                                             \
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

// The grid-stride loop the elementwise kernels of kernels/cuda/ walk their elements with. A .h
// rather than a .cuh: it holds no shared memory for testing/cuda/instrument.py to rewrite, so the
// emulator compiles it as it is (and a __shared__ added here fails there instead of slipping by).
#pragma once

#include "kernels/cuda/launch.h"  // under the emulator: its blockIdx, blockDim, gridDim, threadIdx

// Device code: nvcc and the emulator compile it; host-only C++ (the header lint) sees nothing.
#if defined(__CUDACC__) || defined(RINGDP_CUDA_EMULATOR)
namespace ringdp::kernels {

/// Calls body(i) for each i in [0, n) that this thread owns: i starts at the thread's index in the
/// whole grid and steps by the grid's thread count, so a grid capped by grid_for still covers any
/// n, and neighbouring threads touch neighbouring elements (coalesced). long long: n may pass 2^31.
template <typename Body>
__device__ __forceinline__ void grid_stride(long long n, Body body) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += stride)
    body(i);
}

}  // namespace ringdp::kernels
#endif

// One way to launch a kernel in kernels/cuda/, so the same source builds two ways:
//   RINGDP_LAUNCH(grid, block, shared_bytes, stream, kernel)(args...);
// nvcc sees kernel<<<grid, block, shared_bytes, stream>>>(args...). The CPU emulator (a test
// double, tests only) defines both macros in the <cuda_runtime.h> that shadows CUDA's on its
// include path, so this header names no test file. Tested by the cuda suite (nvcc) and the
// cuda-emu suite (the emulator).
#pragma once

#include <cuda_runtime.h>

// Dynamic shared memory, sized by the launch's shared_bytes:
//   RINGDP_DYNAMIC_SHARED(float, tile);   // extern __shared__ float tile[] under nvcc

#if !defined(RINGDP_CUDA_EMULATOR)
#define RINGDP_LAUNCH(grid, block, shared_bytes, stream, ...) \
  __VA_ARGS__<<<(grid), (block), (shared_bytes), (stream)>>>
#define RINGDP_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#elif !defined(RINGDP_LAUNCH) || !defined(RINGDP_DYNAMIC_SHARED)
// A build flag without its include path would otherwise fail later on CUDA's own headers.
#error "RINGDP_CUDA_EMULATOR is defined but <cuda_runtime.h> is not the emulator's: put its include/ first"
#endif

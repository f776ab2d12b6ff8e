// One way to launch a kernel in kernels/cuda/, so the same source builds two ways:
//   RINGDP_LAUNCH(grid, block, shared_bytes, stream, kernel)(args...);
// nvcc sees kernel<<<grid, block, shared_bytes, stream>>>(args...); the CPU emulator
// (testing/cuda/, tests only) runs the kernel's threads as fibers.
#pragma once

// Dynamic shared memory, sized by the launch's shared_bytes:
//   RINGDP_DYNAMIC_SHARED(float, tile);   // extern __shared__ float tile[] under nvcc

#if defined(RINGDP_CUDA_EMULATOR)
#include "testing/cuda/cuda_emu.h"
#define RINGDP_DYNAMIC_SHARED(type, name) auto name = ::ringdp::emu::dynamic_shared<type>(#name)
#define RINGDP_LAUNCH(grid, block, shared_bytes, stream, ...) \
  ::ringdp::emu::Launcher(#__VA_ARGS__, __VA_ARGS__, (grid), (block), (shared_bytes), (stream))
#else
#define RINGDP_LAUNCH(grid, block, shared_bytes, stream, ...) \
  __VA_ARGS__<<<(grid), (block), (shared_bytes), (stream)>>>
#define RINGDP_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

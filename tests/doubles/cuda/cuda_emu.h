// A CPU emulator of the CUDA execution model, for tests only: the kernel sources in
// kernels/cuda/ are instrumented by instrument.py (shared arrays, launch bounds; see there),
// compiled by g++ with RINGDP_CUDA_EMULATOR defined and tests/doubles/cuda/include first on the include
// path, and run on the CPU under the cuda-emu suite.
//
// How it runs a launch: blocks run one after another on the calling thread; the threads of a
// block run as fibers (ucontext, one small stack each). A fiber runs until it reaches a barrier
// (__syncthreads, or a warp operation) or returns; the scheduler then resumes the next one.
// When every live thread of the block waits at __syncthreads they are all released; when every
// live thread of a warp waits at a warp operation, that warp is released. A `__shared__` array is
// one static SharedArray per kernel (shared.h), which is per block because blocks never overlap.
//
// Stricter than a GPU, where cheap: a __syncthreads() that some threads of a block never reach
// (one returned while others wait), a warp operation not reached by the whole warp, a block of
// more than 1024 threads or of more than the kernel's __launch_bounds__, a shared-memory index out
// of its array's dimension, and (checked mode, on by default) a shared-memory race or a read of
// shared memory the block never wrote are errors naming the kernel, the block and the thread; the
// launch throws ringdp::Error. Out-of-bounds global accesses are caught when built with ASan.
// What it cannot show: speed, memory ordering between blocks or warps, real warp scheduling.
#pragma once

#include <math.h>
#include <setjmp.h>
#include <ucontext.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "tests/doubles/cuda/shared.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// instrument.py rewrites these two; meeting them here means a source skipped instrumentation.
#define __launch_bounds__(...) RINGDP_EMU_SOURCE_NOT_INSTRUMENTED_BY_instrument_py
#define __shared__ RINGDP_EMU_SOURCE_NOT_INSTRUMENTED_BY_instrument_py
#define RINGDP_EMU_LAUNCH_BOUNDS(bound, text) ::ringdp::doubles::check_launch_bounds((bound), (text))
// The launch macros of kernels/cuda/launch.h, defined here so product code names no test file.
#define RINGDP_DYNAMIC_SHARED(type, name) auto name = ::ringdp::doubles::dynamic_shared<type>(#name)
#define RINGDP_LAUNCH(grid, block, shared_bytes, stream, ...) \
  ::ringdp::doubles::Launcher(#__VA_ARGS__, __VA_ARGS__, (grid), (block), (shared_bytes), (stream))

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct float4 {
  float x, y, z, w;
};
struct int4 {
  int x, y, z, w;
};
struct float2 {
  float x, y;
};
constexpr int warpSize = 32;

struct CUstream_emu;  // cudaStream_t in the emulator's cuda_runtime.h

namespace ringdp::doubles {

struct Fiber {
  ucontext_t context;  // first entry onto the fiber's stack
  jmp_buf resume;  // later switches: _setjmp/_longjmp save no signal mask, so no syscall
  dim3 thread_idx;
  int linear = 0;
  bool done = false;
  bool started = false;
  enum class Wait { none, block, warp } wait = Wait::none;
};

struct BlockRun {
  std::vector<Fiber> fibers;
  std::vector<unsigned char> dynamic_shared;  // the launch's dynamic shared memory, one block's worth
  std::vector<std::vector<char>> stacks;
  ucontext_t scheduler;
  jmp_buf scheduler_resume;
  Fiber* current = nullptr;
  std::function<void()> body;
  const char* kernel = "";
  std::string error;
  // Warp exchange slots: one 16-byte value per lane.
  std::vector<std::array<std::array<unsigned char, 16>, 32>> warp_slots;
  // For the shared-memory checks: `interval` advances (from one counter that never repeats) at
  // the start of every block and at every __syncthreads() release, so two accesses with the same
  // interval had no barrier between them; warp_sync[w] likewise at every release of warp w.
  uint64_t interval = 0, block_first_interval = 0, block_serial = 0;
  std::vector<uint64_t> warp_sync;
  SharedBase dynamic_view{"dynamic shared memory", nullptr, 0, 1, {0}};
};

BlockRun& block_run();
extern dim3 g_block_idx, g_block_dim, g_grid_dim;

inline Fiber& current_fiber() { return *block_run().current; }

/// Suspends the calling thread at a barrier of the given scope until the scheduler releases it.
void wait_at(Fiber::Wait scope);
void run_launch(const char* kernel, dim3 grid, dim3 block, size_t shared_bytes,
                const std::function<void()>& body);

/// Ends the calling thread's launch with `message` (the launch then throws it as ringdp::Error).
[[noreturn]] void fail_thread(std::string message);
/// "kernel K, block (x,y,z)" for the block running now.
std::string describe_block();
/// "thread (x,y,z)" for the thread of the running block with the given linear index.
std::string describe_thread(int linear);
/// Both: "kernel K, block (x,y,z), thread (x,y,z)".
std::string describe_where(int linear);
/// Every thread's first act in a kernel declared with __launch_bounds__ (see instrument.py).
void check_launch_bounds(long long bound, const char* bound_text);

/// The launch's dynamic shared memory (its third parameter), checked, as T[bytes / sizeof(T)].
template <typename T>
SharedSpan<T> dynamic_shared(const char* name) {
  BlockRun& run = block_run();
  run.dynamic_view.rebind(run.dynamic_shared.data(), run.dynamic_shared.size() / sizeof(T), sizeof(T), name);
  return SharedSpan<T>(&run.dynamic_view);
}

/// Makes streams asynchronous (see runtime.cpp): enqueued work runs later, in order per stream.
void set_deferred_streams(bool on);
bool deferred_streams();
/// As RINGDP_EMU_DEVICES=n, for a test that needs several devices.
void set_device_count(int n);
/// Which stream with runnable work moves next when the host polls.
enum class StreamOrder { round_robin, newest_first, oldest_first };
void set_stream_order(StreamOrder order);
/// True when [p, p + bytes) lies inside one cudaMalloc allocation.
bool is_device_memory(const void* p, size_t bytes);
/// The device of the allocation holding [p, p + bytes), or -1 when it is not device memory.
int device_of(const void* p, size_t bytes);
/// The device a stream belongs to (the default stream: the calling thread's current device).
int stream_device(CUstream_emu* stream);
int current_device();
/// Drops every queued item unrun (a test that only checks that a launch is accepted).
void discard_streams();
/// "" when pointer argument `argument` of `kernel` may be used on `stream`, else why not.
std::string check_pointer_device(const char* kernel, size_t argument, const void* p, CUstream_emu* stream);
/// Leaves cudaErrorInvalidDevice, explained, for the next cudaGetLastError; nothing runs.
void refuse_launch(std::string detail);
/// Stops (or restarts) the deferred queue: enqueued work never runs, events never fire.
void stall_streams(bool on);
/// Runs `work` now, or queues it behind earlier work of `stream` when streams are deferred.
void enqueue(CUstream_emu* stream, std::function<void()> work);
/// As CUDA checks a launch's configuration when it is made: a block of 0 or more than 1024
/// threads, or a grid out of range, launches nothing and leaves cudaErrorInvalidConfiguration
/// for this thread's next cudaGetLastError (which then resets it). Returns whether it is valid.
bool accept_launch(dim3 grid, dim3 block);

template <typename... Params>
struct Launcher {
  const char* name;
  void (*kernel)(Params...);
  dim3 grid, block;
  size_t shared_bytes;
  CUstream_emu* stream;
  Launcher(const char* n, void (*k)(Params...), dim3 g, dim3 b, size_t shared, CUstream_emu* s)
      : name(n), kernel(k), grid(g), block(b), shared_bytes(shared), stream(s) {}
  template <typename... Args>
  void operator()(Args&&... args) const {
    // The arguments are copied now, as a launch copies them, whenever the kernel runs.
    std::tuple<Params...> bound(static_cast<Params>(args)...);
    if (!accept_launch(grid, block)) return;
    std::string wrong_device;
    size_t index = 0;
    std::apply(
        [&](const auto&... param) {
          auto check = [&](const auto& value) {
            if constexpr (std::is_pointer_v<std::decay_t<decltype(value)>>) {
              if (wrong_device.empty()) wrong_device = check_pointer_device(name, index, value, stream);
            }
            ++index;
          };
          (void)check;
          (check(param), ...);
        },
        bound);
    if (!wrong_device.empty()) return refuse_launch(std::move(wrong_device));
    enqueue(stream, [k = kernel, bound, n = name, g = grid, b = block, shared = shared_bytes] {
      run_launch(n, g, b, shared, [k, &bound] { std::apply(k, bound); });
    });
  }
};

template <typename T>
T warp_exchange(T value, int source_lane) {
  static_assert(sizeof(T) <= 16, "warp exchange of values up to 16 bytes");
  Fiber& f = current_fiber();
  auto& slots = block_run().warp_slots[f.linear / 32];
  std::memcpy(slots[f.linear % 32].data(), &value, sizeof(T));
  wait_at(Fiber::Wait::warp);
  T out = value;
  if (source_lane >= 0 && source_lane < 32) std::memcpy(&out, slots[source_lane].data(), sizeof(T));
  wait_at(Fiber::Wait::warp);  // nobody overwrites a slot before everyone has read
  return out;
}

}  // namespace ringdp::doubles

#define threadIdx (::ringdp::doubles::current_fiber().thread_idx)
#define blockIdx (::ringdp::doubles::g_block_idx)
#define blockDim (::ringdp::doubles::g_block_dim)
#define gridDim (::ringdp::doubles::g_grid_dim)

inline void __syncthreads() { ::ringdp::doubles::wait_at(::ringdp::doubles::Fiber::Wait::block); }
inline void __syncwarp(unsigned = 0xffffffffu) {
  ::ringdp::doubles::wait_at(::ringdp::doubles::Fiber::Wait::warp);
}
inline int emu_lane() { return ::ringdp::doubles::current_fiber().linear % 32; }

template <typename T>
T __shfl_sync(unsigned, T v, int lane, int width = 32) {
  return ::ringdp::doubles::warp_exchange(v, (emu_lane() / width) * width + lane % width);
}
template <typename T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = emu_lane(), target = lane + static_cast<int>(delta);
  return ::ringdp::doubles::warp_exchange(v, target / width == lane / width ? target : lane);
}
template <typename T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = emu_lane(), target = lane - static_cast<int>(delta);
  return ::ringdp::doubles::warp_exchange(v, target >= (lane / width) * width ? target : lane);
}
template <typename T>
T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  const int lane = emu_lane(), target = lane ^ mask;
  return ::ringdp::doubles::warp_exchange(v, target / width == lane / width ? target : lane);
}
inline unsigned __ballot_sync(unsigned, int predicate) {
  unsigned bits = 0;
  for (int lane = 0; lane < 32; ++lane) {
    const int p = ::ringdp::doubles::warp_exchange(predicate ? 1 : 0, lane);
    bits |= (p ? 1u : 0u) << lane;
  }
  return bits;
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) { return __ballot_sync(mask, !predicate) == 0; }

// Fibers never run at the same time, so plain read-modify-write is atomic here.
template <typename T>
T atomicAdd(T* p, T v) {
  T old = *p;
  *p = old + v;
  return old;
}
template <typename T>
T atomicMax(T* p, T v) {
  T old = *p;
  *p = std::max(old, v);
  return old;
}
template <typename T>
T atomicMin(T* p, T v) {
  T old = *p;
  *p = std::min(old, v);
  return old;
}
template <typename T>
T atomicCAS(T* p, T compare, T v) {
  T old = *p;
  if (old == compare) *p = v;
  return old;
}
template <typename T>
T __ldg(const T* p) {
  return *p;
}

// The emulator's CUDA runtime calls (see include/cuda_runtime.h), and its streams.
//
// Streams: by default every asynchronous call runs at once, which is all the kernel tests need.
// With set_deferred_streams(true) the work of every stream (copies, memsets, kernel launches,
// event records) goes into one queue and runs later, in order: one item each time the host polls
// (cudaEventQuery, cudaStreamQuery), everything at a synchronising call. Code that reads device
// results without waiting for them, or that posts a send before its staging copy has finished,
// then sees stale data, as it would on a GPU, only every time instead of now and then. One queue
// for all streams orders more than CUDA does, so a missing cross-stream wait goes unseen.
// stall_streams(true) stops the queue altogether: a GPU that never finishes, for watchdog tests.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>

#include "kernels/emu/include/cuda_runtime.h"

#include <algorithm>

struct CUstream_emu {};
struct CUevent_emu {
  bool reached = true;  // a never-recorded event counts as complete, as in CUDA
};

namespace ringdp::emu {
namespace {

struct Queue {
  bool deferred = false;
  bool stalled = false;
  std::deque<std::function<void()>> work;
};

Queue& queue() {
  static Queue q;
  return q;
}

bool run_one() {
  Queue& q = queue();
  if (q.work.empty() || q.stalled) return false;
  std::function<void()> item = std::move(q.work.front());
  q.work.pop_front();
  item();
  return true;
}

void drain() {
  while (run_one()) {
  }
}

// Device allocations (address -> bytes), so the runtime can refuse what a GPU would: a
// host-to-device copy into host memory, or NCCL (tests/mpi/nccl_emu) handed a host buffer.
struct Allocations {
  std::mutex mutex;
  std::map<uintptr_t, size_t> device;
};

Allocations& allocations() {
  static Allocations a;
  return a;
}

}  // namespace

bool is_device_memory(const void* p, size_t bytes) {
  Allocations& a = allocations();
  std::lock_guard lock(a.mutex);
  const auto address = reinterpret_cast<uintptr_t>(p);
  auto it = a.device.upper_bound(address);
  if (it == a.device.begin()) return false;
  --it;
  return address + bytes <= it->first + it->second;
}

void set_deferred_streams(bool on) {
  drain();
  queue().deferred = on;
}

void stall_streams(bool on) { queue().stalled = on; }

void enqueue(std::function<void()> work) {
  if (queue().deferred) {
    queue().work.push_back(std::move(work));
  } else {
    work();
  }
}

}  // namespace ringdp::emu

using ringdp::emu::drain;
using ringdp::emu::enqueue;
using ringdp::emu::run_one;

const char* cudaGetErrorName(cudaError_t e) {
  return e == cudaSuccess ? "cudaSuccess" : e == cudaErrorNotReady ? "cudaErrorNotReady" : "cudaErrorEmulated";
}
const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error"
         : e == cudaErrorInvalidValue ? "invalid argument (the emulator: a copy whose kind names device memory that is not)"
                                      : "emulated error";
}
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int* count) { *count = 1; return cudaSuccess; }
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { drain(); return cudaSuccess; }
namespace {
void* aligned_bytes(size_t bytes) { return std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256); }

// Where a copy's kind says device memory, it must be device memory (the GPU would fault).
bool kind_matches(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  using ringdp::emu::is_device_memory;
  const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  return bytes == 0 || ((!dst_device || is_device_memory(dst, bytes)) && (!src_device || is_device_memory(src, bytes)));
}
}  // namespace

cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = aligned_bytes(bytes);
  if (!*p) return cudaErrorMemoryAllocation;
  auto& a = ringdp::emu::allocations();
  std::lock_guard lock(a.mutex);
  a.device[reinterpret_cast<uintptr_t>(*p)] = bytes;
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  drain();  // as cudaFree does, so no queued work touches freed memory
  {
    auto& a = ringdp::emu::allocations();
    std::lock_guard lock(a.mutex);
    a.device.erase(reinterpret_cast<uintptr_t>(p));
  }
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) {
  *p = aligned_bytes(bytes);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFreeHost(void* p) {
  drain();
  std::free(p);
  return cudaSuccess;
}
// CUDA accepts empty copies and sets with any pointer (even null); memmove and memset do not.
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (!kind_matches(dst, src, bytes, kind)) return cudaErrorInvalidValue;
  drain();
  if (bytes) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  if (!kind_matches(dst, src, bytes, kind)) return cudaErrorInvalidValue;
  if (bytes) enqueue([=] { std::memmove(dst, src, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  drain();
  if (bytes) std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t) {
  if (bytes) enqueue([=] { std::memset(p, value, bytes); });
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { drain(); return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) { *stream = new CUstream_emu; return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t stream) { drain(); delete stream; return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t) {
  run_one();
  return ringdp::emu::queue().work.empty() ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) { return cudaSuccess; }  // one queue: ordered already
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) { *event = new CUevent_emu; return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t event) { delete event; return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  event->reached = false;
  enqueue([event] { event->reached = true; });
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!event->reached) run_one();
  return event->reached ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  while (!event->reached && run_one()) {
  }
  return event->reached ? cudaSuccess : cudaErrorNotReady;  // only a stalled queue leaves it unreached
}

// The emulator's CUDA runtime calls (see include/cuda_runtime.h), and its streams.
//
// Streams: by default every asynchronous call runs at once, which is all the kernel tests need.
// With set_deferred_streams(true) each stream (the default one included) gets its own queue of
// work (copies, memsets, kernel launches, event records, waits for events), run later, in order
// within the stream: one item each time the host polls (cudaEventQuery, cudaStreamQuery), and
// everything at a synchronising call. Which stream moves next is set_stream_order's choice
// (round robin, newest stream first, oldest first): code that reads device results without
// waiting for them, posts a send before its staging copy has finished, or forgets a
// cudaStreamWaitEvent between two streams then sees stale data, as on a GPU, only every time
// instead of now and then. All streams here are non-blocking: the legacy default stream's
// implicit synchronisation with other streams is not modelled (ringdp's streams opt out of it).
// stall_streams(true) stops every queue: a GPU that never finishes, for watchdog tests.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "testing/cuda/include/cuda_runtime.h"

#include <algorithm>
#include <atomic>

struct CUstream_emu {
  uint64_t serial = 0;  // creation order, for set_stream_order
};
struct CUevent_emu {
  // Atomic: a watchdog thread may query an event while the host thread records it.
  std::atomic<uint64_t> recorded{0}, fired{0};  // a never-recorded event counts as complete, as in CUDA
  bool reached() const { return fired >= recorded; }
};

namespace ringdp::emu {
namespace {

struct Item {
  std::function<void()> work;
  CUevent_emu* wait_for = nullptr;  // a cudaStreamWaitEvent: blocks the stream until it fires
  uint64_t generation = 0;
  bool runnable() const { return !wait_for || wait_for->fired >= generation; }
};

struct Queues {
  bool deferred = false;
  std::thread::id host;  // the only thread whose polls move work (the queues are not shared)
  bool stalled = false;
  StreamOrder order = StreamOrder::round_robin;
  uint64_t next_serial = 1;
  // Keyed by creation order (0: the default stream), so the policies are walks over the map.
  std::map<uint64_t, std::deque<Item>> streams;
  uint64_t last = 0;  // the stream moved last (round robin)
};

Queues& queues() {
  static Queues q;
  return q;
}

uint64_t serial_of(CUstream_emu* s) { return s ? s->serial : 0; }

bool run_one() {
  Queues& q = queues();
  // Another thread (a watchdog) sees events fire as the host's polls move the work; it moves none.
  if (q.stalled || std::this_thread::get_id() != q.host) return false;
  auto ready = [](const std::pair<const uint64_t, std::deque<Item>>& s) {
    return !s.second.empty() && s.second.front().runnable();
  };
  auto pick = q.streams.end();
  if (q.order == StreamOrder::newest_first) {
    auto r = std::find_if(q.streams.rbegin(), q.streams.rend(), ready);
    if (r != q.streams.rend()) pick = std::prev(r.base());
  } else if (q.order == StreamOrder::oldest_first) {
    pick = std::find_if(q.streams.begin(), q.streams.end(), ready);
  } else {
    pick = std::find_if(q.streams.upper_bound(q.last), q.streams.end(), ready);
    if (pick == q.streams.end()) pick = std::find_if(q.streams.begin(), q.streams.end(), ready);
  }
  if (pick == q.streams.end()) return false;
  q.last = pick->first;
  Item item = std::move(pick->second.front());
  pick->second.pop_front();
  if (item.work) item.work();
  return true;
}

bool all_empty() {
  for (auto& [stream, items] : queues().streams)
    if (!items.empty()) return false;
  return true;
}

void drain() {
  while (run_one()) {
  }
  if (!queues().stalled && !all_empty()) {
    std::fprintf(stderr,
                 "CUDA emulator: the streams are deadlocked: work waits for an event that no stream will "
                 "record (a cudaStreamWaitEvent on an event recorded later?)\n");
    std::abort();
  }
}

// Device allocations (address -> bytes), so the runtime can refuse what a GPU would: a
// host-to-device copy into host memory, or NCCL (testing/nccl) handed a host buffer.
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
  queues().host = std::this_thread::get_id();
  drain();
  queues().deferred = on;
}

void set_stream_order(StreamOrder order) { queues().order = order; }

void stall_streams(bool on) { queues().stalled = on; }

namespace {
thread_local cudaError_t g_last_error = cudaSuccess;  // per host thread, as CUDA keeps it
}  // namespace

bool accept_launch(dim3 grid, dim3 block) {
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  const bool valid = threads >= 1 && threads <= 1024 && block.z <= 64 && grid.x >= 1 && grid.y >= 1 &&
                     grid.z >= 1 && grid.y <= 65535 && grid.z <= 65535;
  if (!valid) g_last_error = cudaErrorInvalidConfiguration;
  return valid;
}

void enqueue(CUstream_emu* stream, std::function<void()> work) {
  if (queues().deferred) {
    queues().streams[serial_of(stream)].push_back(Item{std::move(work)});
  } else {
    work();
  }
}

}  // namespace ringdp::emu

using ringdp::emu::drain;
using ringdp::emu::enqueue;
using ringdp::emu::run_one;

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    default: return "cudaErrorEmulated";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error"
         : e == cudaErrorInvalidValue
             ? "invalid argument (the emulator: a copy whose kind names device memory that is not)"
         : e == cudaErrorInvalidConfiguration ? "invalid configuration argument"
                                              : "emulated error";
}
cudaError_t cudaGetLastError() { return std::exchange(ringdp::emu::g_last_error, cudaSuccess); }
cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() {
  drain();
  return cudaSuccess;
}
namespace {
void* aligned_bytes(size_t bytes) {
  return std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
}

// Where a copy's kind says device memory, it must be device memory (the GPU would fault).
bool kind_matches(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  using ringdp::emu::is_device_memory;
  const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  return bytes == 0 ||
         ((!dst_device || is_device_memory(dst, bytes)) && (!src_device || is_device_memory(src, bytes)));
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
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  if (!kind_matches(dst, src, bytes, kind)) return cudaErrorInvalidValue;
  if (bytes) enqueue(stream, [=] { std::memmove(dst, src, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  drain();
  if (bytes) std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  if (bytes) enqueue(stream, [=] { std::memset(p, value, bytes); });
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  drain();
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = new CUstream_emu{ringdp::emu::queues().next_serial++};
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  drain();
  ringdp::emu::queues().streams.erase(ringdp::emu::serial_of(stream));
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  run_one();
  auto& streams = ringdp::emu::queues().streams;
  auto it = streams.find(ringdp::emu::serial_of(stream));
  return it == streams.end() || it->second.empty() ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  if (!ringdp::emu::queues().deferred || event->reached()) return cudaSuccess;
  ringdp::emu::queues().streams[ringdp::emu::serial_of(stream)].push_back(
      ringdp::emu::Item{nullptr, event, event->recorded});
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) {
  *event = new CUevent_emu;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  const uint64_t generation = ++event->recorded;
  enqueue(stream, [event, generation] { event->fired = std::max<uint64_t>(event->fired, generation); });
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!event->reached()) run_one();
  return event->reached() ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  while (!event->reached() && run_one()) {
  }
  return event->reached() ? cudaSuccess : cudaErrorNotReady;  // only a stalled queue leaves it unreached
}

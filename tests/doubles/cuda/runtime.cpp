// The emulator's CUDA runtime calls (see include/cuda_runtime.h), and its streams.
//
// Streams: by default every asynchronous call runs at once, which is all the kernel tests need.
// With set_deferred_streams(true) each stream (the default one included) gets its own queue of
// work (copies, memsets, kernel launches, event records, waits for events), run later, in order
// within the stream: one item each time a thread that gives the streams work polls
// (cudaEventQuery, cudaStreamQuery), and// everything at a synchronising call. Which stream moves next is
// set_stream_order's choice (round robin, newest stream first, oldest first): code that reads device results
// without waiting for them, posts a send before its staging copy has finished, or forgets a
// cudaStreamWaitEvent between two streams then sees stale data, as on a GPU, only every time
// instead of now and then. All streams here are non-blocking: the legacy default stream's
// implicit synchronisation with other streams is not modelled (ringdp's streams opt out of it,
// and torch's side streams do too). So, as in CUDA, a synchronous copy or set waits for the
// default stream only, and a synchronous copy from pageable host memory to the device may land
// after it returns (it is queued on the default stream); an asynchronous one from pageable memory
// takes the bytes before it returns, and one into pageable memory returns once they have landed.
// Memory from cudaMallocHost is pinned: copies to and from it are read and written when they run.
// stall_streams(true) stops every queue: a GPU that never finishes, for watchdog tests.
//
// Devices: RINGDP_EMU_DEVICES=N (default 1) devices. As in CUDA, the current device is per host
// thread (cudaSetDevice), and every allocation, stream and event belongs to the device that was
// current when it was made (the default stream to the caller's current device). A kernel whose
// pointer arguments, or a copy or memset whose device pointers, belong to another device than
// the stream it runs on is refused, naming both devices: on a GPU the kernel faults
// (cudaErrorIllegalAddress, later and sticky) and a copy becomes a slow peer copy; in ringdp
// either is the bug of a tensor placed on the wrong GPU. An event recorded on another device's
// stream fails as in CUDA.
// Teardown: as the CUDA runtime does, the emulator registers its shutdown with atexit at its
// first use; a CUDA call after it (a static destroyed after main returned, still holding
// streams or memory) is reported and aborts, where CUDA returns cudaErrorCudartUnloading.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "tests/doubles/cuda/include/cuda_runtime.h"

#include <algorithm>
#include <atomic>
#include <string>

struct CUstream_emu {
  uint64_t serial = 0;  // creation order, for set_stream_order
  int device = 0;
};
struct CUevent_emu {
  // Atomic: a watchdog thread may query an event while the host thread records it.
  std::atomic<uint64_t> recorded{0}, fired{0};  // a never-recorded event counts as complete, as in CUDA
  int device = 0;
  bool reached() const { return fired >= recorded; }
};

namespace ringdp::doubles {
namespace {

struct Item {
  std::function<void()> work;
  CUevent_emu* wait_for = nullptr;  // a cudaStreamWaitEvent: blocks the stream until it fires
  uint64_t generation = 0;
  bool runnable() const { return !wait_for || wait_for->fired >= generation; }
};

struct Queues {
  // Taken around every change to the queues (never while work runs): the NCCL stand-in's own
  // thread enqueues a group while the host thread polls.
  std::recursive_mutex mutex;
  bool deferred = false;
  // Work runs one item at a time, whichever thread polls: kernels share the fiber scheduler.
  std::mutex running;
  bool stalled = false;
  StreamOrder order = StreamOrder::round_robin;
  uint64_t next_serial = 1;
  // Keyed by creation order (0: the default stream), so the policies are walks over the map.
  std::map<uint64_t, std::deque<Item>> streams;
  uint64_t last = 0;  // the stream moved last (round robin)
};

std::atomic<bool> g_unloaded{false};

void mark_unloaded() { g_unloaded = true; }

Queues& queues() {
  static Queues* q = [] {
    std::atexit(mark_unloaded);  // CUDA's runtime registers its teardown at first use too
    auto* fresh = new Queues;  // never destroyed: a late call is reported, not a crash in a dead map
    // RINGDP_EMU_DEFERRED=1: asynchronous from the start, for programs that cannot call
    // set_deferred_streams (a product main, a shared test main).
    const char* env = std::getenv("RINGDP_EMU_DEFERRED");
    fresh->deferred = env && std::strcmp(env, "1") == 0;
    return fresh;
  }();
  return *q;
}

// Every runtime call starts here: a call after teardown is a static that outlived the runtime.
void check_alive(const char* call) {
  queues();
  if (!g_unloaded) return;
  std::fprintf(stderr,
               "CUDA emulator: %s called after the CUDA runtime shut down (at exit): an object destroyed "
               "after main returned still holds CUDA resources; destroy it before main returns (CUDA "
               "returns cudaErrorCudartUnloading here, and NCCL may hang or crash)\n",
               call);
  std::abort();
}

int& devices() {
  static int n = [] {
    const char* env = std::getenv("RINGDP_EMU_DEVICES");
    const int v = env ? std::atoi(env) : 1;
    return v >= 1 ? v : 1;
  }();
  return n;
}
int device_count() { return devices(); }

thread_local int g_current_device = 0;
thread_local std::string g_detail;  // what cudaGetErrorString adds for the emulator's refusals
thread_local cudaError_t g_detail_for = cudaSuccess;

cudaError_t refuse(cudaError_t code, std::string detail) {
  g_detail = std::move(detail);
  g_detail_for = code;
  return code;
}

uint64_t serial_of(CUstream_emu* s) { return s ? s->serial : 0; }

// Whether this thread's polls move work: only threads that have given the streams work (the
// host, a communicator's worker). A watchdog that only queries events sees them fire as the
// others move the work and moves none itself, so work with MPI in it (the NCCL stand-in's
// groups) never runs on a thread that must stay out of MPI.
thread_local bool g_moves_work = false;

bool run_one() {
  Queues& q = queues();
  if (q.stalled || !g_moves_work) return false;
  std::lock_guard running(q.running);
  std::unique_lock lock(q.mutex);
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
  lock.unlock();
  if (item.work) item.work();
  return true;
}

bool all_empty() {
  std::lock_guard lock(queues().mutex);
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
// host-to-device copy into host memory, or NCCL (tests/doubles/nccl) handed a host buffer.
struct Allocation {
  size_t bytes;
  int device;
};
struct Allocations {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> device;
  std::map<uintptr_t, size_t> pinned;  // cudaMallocHost's: address -> bytes
};

Allocations& allocations() {
  static Allocations a;
  return a;
}

}  // namespace

int device_of(const void* p, size_t bytes) {
  Allocations& a = allocations();
  std::lock_guard lock(a.mutex);
  const auto address = reinterpret_cast<uintptr_t>(p);
  auto it = a.device.upper_bound(address);
  if (it == a.device.begin()) return -1;
  --it;
  return address + bytes <= it->first + it->second.bytes ? it->second.device : -1;
}

bool is_device_memory(const void* p, size_t bytes) { return device_of(p, bytes) >= 0; }

namespace {
bool is_pinned(const void* p, size_t bytes) {
  Allocations& a = allocations();
  std::lock_guard lock(a.mutex);
  const auto address = reinterpret_cast<uintptr_t>(p);
  auto it = a.pinned.upper_bound(address);
  if (it == a.pinned.begin()) return false;
  --it;
  return address + bytes <= it->first + it->second;
}

// Runs work until `stream` holds none: what a call synchronous with one stream waits for. Other
// streams move as the order picks them, and as this one's waits need.
void drain_stream(CUstream_emu* stream) {
  const uint64_t serial = serial_of(stream);
  const auto empty = [serial] {
    std::lock_guard lock(queues().mutex);
    auto it = queues().streams.find(serial);
    return it == queues().streams.end() || it->second.empty();
  };
  while (!empty())
    if (!run_one()) {
      if (!queues().stalled) drain();  // reports the deadlock: nothing can run, yet this stream holds work
      return;
    }
}
}  // namespace

namespace {
thread_local cudaError_t g_last_error = cudaSuccess;  // per host thread, as CUDA keeps it
}  // namespace

int stream_device(CUstream_emu* stream) { return stream ? stream->device : g_current_device; }

int current_device() { return g_current_device; }

std::string check_pointer_device(const char* kernel, size_t argument, const void* p, CUstream_emu* stream) {
  const int owner = device_of(p, 1);
  const int runs_on = stream_device(stream);
  if (owner < 0 || owner == runs_on) return {};
  return detail::concat("kernel ", kernel, " launched on a stream of cuda:", runs_on, " with argument ",
                        argument + 1, " (", p, ") in memory of cuda:", owner,
                        " (the emulator refuses what faults on a GPU: a tensor on the wrong device)");
}

void refuse_launch(std::string detail) { g_last_error = refuse(cudaErrorInvalidDevice, std::move(detail)); }

void discard_streams() {
  std::lock_guard lock(queues().mutex);
  for (auto& [serial, items] : queues().streams) items.clear();
}

void set_deferred_streams(bool on) {
  g_moves_work = true;
  drain();
  queues().deferred = on;
}

bool deferred_streams() { return queues().deferred; }

void set_device_count(int n) { devices() = n; }

void set_stream_order(StreamOrder order) { queues().order = order; }

void stall_streams(bool on) { queues().stalled = on; }

bool accept_launch(dim3 grid, dim3 block) {
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  const bool valid = threads >= 1 && threads <= 1024 && block.z <= 64 && grid.x >= 1 && grid.y >= 1 &&
                     grid.z >= 1 && grid.y <= 65535 && grid.z <= 65535;
  if (!valid) g_last_error = cudaErrorInvalidConfiguration;
  return valid;
}

void enqueue(CUstream_emu* stream, std::function<void()> work) {
  g_moves_work = true;
  if (queues().deferred) {
    std::lock_guard lock(queues().mutex);
    queues().streams[serial_of(stream)].push_back(Item{std::move(work)});
  } else {
    work();
  }
}

}  // namespace ringdp::doubles

using ringdp::doubles::check_alive;
using ringdp::doubles::drain;
using ringdp::doubles::enqueue;
using ringdp::doubles::refuse;
using ringdp::doubles::run_one;

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    default: return "cudaErrorEmulated";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  if (e != cudaSuccess && e == ringdp::doubles::g_detail_for) return ringdp::doubles::g_detail.c_str();
  return e == cudaSuccess ? "no error"
         : e == cudaErrorInvalidValue
             ? "invalid argument (the emulator: a copy whose kind names device memory that is not)"
         : e == cudaErrorInvalidConfiguration ? "invalid configuration argument"
                                              : "emulated error";
}
cudaError_t cudaGetLastError() { return std::exchange(ringdp::doubles::g_last_error, cudaSuccess); }
cudaError_t cudaGetDeviceCount(int* count) {
  check_alive("cudaGetDeviceCount");
  *count = ringdp::doubles::device_count();
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  check_alive("cudaSetDevice");
  if (device < 0 || device >= ringdp::doubles::device_count())
    return refuse(cudaErrorInvalidDevice,
                  ringdp::detail::concat("cudaSetDevice(", device, "): the emulator has ",
                                         ringdp::doubles::device_count(), " device(s) (RINGDP_EMU_DEVICES)"));
  ringdp::doubles::g_current_device = device;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  check_alive("cudaGetDevice");
  *device = ringdp::doubles::g_current_device;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  check_alive("cudaDeviceSynchronize");
  drain();
  return cudaSuccess;
}
namespace {
void* aligned_bytes(size_t bytes) {
  return std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
}

// Where a copy's kind says device memory, it must be device memory (the GPU would fault), and
// of the device the copy runs on (`device`; see the file comment). cudaSuccess or the refusal.
// device < 0: a synchronous copy, which CUDA routes by the pointers themselves (unified
// addressing); only two device pointers of different devices are refused then.
cudaError_t check_copy(const char* call, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                       int device) {
  using ringdp::doubles::device_of;
  if (bytes == 0) return cudaSuccess;
  const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if ((dst_device && device_of(dst, bytes) < 0) || (src_device && device_of(src, bytes) < 0))
    return cudaErrorInvalidValue;
  if (device < 0) device = dst_device ? device_of(dst, bytes) : src_device ? device_of(src, bytes) : 0;
  const int dst_owner = dst_device ? device_of(dst, bytes) : device;
  const int src_owner = src_device ? device_of(src, bytes) : device;
  if (dst_owner != device || src_owner != device)
    return refuse(cudaErrorInvalidDevice,
                  ringdp::detail::concat(call, " on cuda:", device, " with ",
                                         dst_owner != device ? "destination" : "source",
                                         " memory of cuda:", dst_owner != device ? dst_owner : src_owner,
                                         " (the emulator refuses copies between devices: in ringdp each is a "
                                         "tensor on the wrong GPU)"));
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaMalloc(void** p, size_t bytes) {
  check_alive("cudaMalloc");
  *p = aligned_bytes(bytes);
  if (!*p) return cudaErrorMemoryAllocation;
  auto& a = ringdp::doubles::allocations();
  std::lock_guard lock(a.mutex);
  a.device[reinterpret_cast<uintptr_t>(*p)] = {bytes, ringdp::doubles::g_current_device};
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  check_alive("cudaFree");
  drain();  // as cudaFree does, so no queued work touches freed memory
  {
    auto& a = ringdp::doubles::allocations();
    std::lock_guard lock(a.mutex);
    a.device.erase(reinterpret_cast<uintptr_t>(p));
  }
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) {
  check_alive("cudaMallocHost");
  *p = aligned_bytes(bytes);
  if (!*p) return cudaErrorMemoryAllocation;
  auto& a = ringdp::doubles::allocations();
  std::lock_guard lock(a.mutex);
  a.pinned[reinterpret_cast<uintptr_t>(*p)] = std::max<size_t>(bytes, 1);
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) {
  check_alive("cudaFreeHost");
  drain();
  {
    auto& a = ringdp::doubles::allocations();
    std::lock_guard lock(a.mutex);
    a.pinned.erase(reinterpret_cast<uintptr_t>(p));
  }
  std::free(p);
  return cudaSuccess;
}
// CUDA accepts empty copies and sets with any pointer (even null); memmove and memset do not.
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  check_alive("cudaMemcpy");
  if (const cudaError_t e = check_copy("cudaMemcpy", dst, src, bytes, kind, -1)) return e;
  ringdp::doubles::drain_stream(nullptr);
  if (bytes && kind == cudaMemcpyHostToDevice && !ringdp::doubles::is_pinned(src, bytes)) {
    // Staged and returned: the DMA lands later, in the default stream's order.
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + bytes);
    enqueue(nullptr, [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
  } else if (bytes) {
    std::memmove(dst, src, bytes);
  }
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  check_alive("cudaMemcpyAsync");
  if (const cudaError_t e =
          check_copy("cudaMemcpyAsync", dst, src, bytes, kind, ringdp::doubles::stream_device(stream)))
    return e;
  if (!bytes) return cudaSuccess;
  if (kind == cudaMemcpyHostToDevice && !ringdp::doubles::is_pinned(src, bytes)) {
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + bytes);
    enqueue(stream, [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
    return cudaSuccess;
  }
  enqueue(stream, [=] { std::memmove(dst, src, bytes); });
  if (kind == cudaMemcpyDeviceToHost && !ringdp::doubles::is_pinned(dst, bytes))
    ringdp::doubles::drain_stream(stream);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  check_alive("cudaMemset");
  if (const cudaError_t e = check_copy("cudaMemset", p, nullptr, bytes, cudaMemcpyHostToDevice, -1)) return e;
  ringdp::doubles::drain_stream(nullptr);
  if (bytes) std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  check_alive("cudaMemsetAsync");
  if (const cudaError_t e = check_copy("cudaMemsetAsync", p, nullptr, bytes, cudaMemcpyHostToDevice,
                                       ringdp::doubles::stream_device(stream)))
    return e;
  if (bytes) enqueue(stream, [=] { std::memset(p, value, bytes); });
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  check_alive("cudaStreamSynchronize");
  drain();
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  check_alive("cudaStreamCreateWithFlags");
  std::lock_guard lock(ringdp::doubles::queues().mutex);
  *stream = new CUstream_emu{ringdp::doubles::queues().next_serial++, ringdp::doubles::g_current_device};
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  check_alive("cudaStreamDestroy");
  drain();
  {
    std::lock_guard lock(ringdp::doubles::queues().mutex);
    ringdp::doubles::queues().streams.erase(ringdp::doubles::serial_of(stream));
  }
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  check_alive("cudaStreamQuery");
  run_one();
  auto& q = ringdp::doubles::queues();
  std::lock_guard lock(q.mutex);
  auto it = q.streams.find(ringdp::doubles::serial_of(stream));
  return it == q.streams.end() || it->second.empty() ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  check_alive("cudaStreamWaitEvent");
  auto& q = ringdp::doubles::queues();
  std::lock_guard lock(q.mutex);
  ringdp::doubles::g_moves_work = true;
  if (!q.deferred || event->reached()) return cudaSuccess;
  q.streams[ringdp::doubles::serial_of(stream)].push_back(
      ringdp::doubles::Item{nullptr, event, event->recorded});
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) {
  check_alive("cudaEventCreateWithFlags");
  *event = new CUevent_emu;
  (*event)->device = ringdp::doubles::g_current_device;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  check_alive("cudaEventDestroy");
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  check_alive("cudaEventRecord");
  const int device = ringdp::doubles::stream_device(stream);
  if (device != event->device)
    return refuse(cudaErrorInvalidResourceHandle,
                  ringdp::detail::concat("cudaEventRecord: an event of cuda:", event->device,
                                         " recorded on a stream of cuda:", device, " (CUDA refuses it too)"));
  const uint64_t generation = ++event->recorded;
  enqueue(stream, [event, generation] { event->fired = std::max<uint64_t>(event->fired, generation); });
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  check_alive("cudaEventQuery");
  if (!event->reached()) run_one();
  return event->reached() ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  check_alive("cudaEventSynchronize");
  while (!event->reached() && run_one()) {
  }
  return event->reached() ? cudaSuccess : cudaErrorNotReady;  // only a stalled queue leaves it unreached
}

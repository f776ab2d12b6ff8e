// Implements comm/transport/cuda/cuda_stream_transport.h (the contract is documented there). Tested through
// its two transports: tests/mpi/test_mpi_device_transports.cpp (emulator) and tests/gpu/device_check.sh.
#include "comm/transport/cuda/cuda_stream_transport.h"

#if RINGDP_HAVE_CUDA || defined(RINGDP_CUDA_EMULATOR)
#include <cstdio>
#include <exception>
#include <utility>

#include "comm/bootstrap/mpi_runtime.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/elementwise.h"

namespace ringdp::comm {

CudaStreamTransport::CudaStreamTransport(int device, const char* who) : Transport(true) {
  int devices = 0;
  RINGDP_CUDA_CHECK(cudaGetDeviceCount(&devices));
  RINGDP_CHECK(devices > 0, who, " needs a CUDA device; none is visible");
  RINGDP_CHECK(device >= 0 && device < devices, who, ": CUDA device cuda:", device, " does not exist (",
               devices, " visible)");
  device_ = device;
  RINGDP_CUDA_CHECK(cudaSetDevice(device_));
  RINGDP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  RINGDP_CUDA_CHECK(cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming));
}

CudaStreamTransport::~CudaStreamTransport() {
  stop_watchdog();
  if (stream_) cudaStreamSynchronize(stream_);
  for (cudaEvent_t e : all_events_) cudaEventDestroy(e);
  if (compute_done_) cudaEventDestroy(compute_done_);
  if (stream_) cudaStreamDestroy(stream_);
}

void CudaStreamTransport::stop_watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

Transport::Buffer CudaStreamTransport::allocate(size_t bytes) {
  void* p = nullptr;
  RINGDP_CUDA_CHECK(cudaMalloc(&p, bytes));
  return Buffer(p, [](void* q) { cudaFree(q); });
}

void CudaStreamTransport::activate() { RINGDP_CUDA_CHECK(cudaSetDevice(device_)); }

void CudaStreamTransport::wait_for_compute(cudaStream_t caller) {
  RINGDP_CUDA_CHECK(cudaEventRecord(compute_done_, caller));
  RINGDP_CUDA_CHECK(cudaStreamWaitEvent(stream_, compute_done_, 0));
}

void CudaStreamTransport::synchronize() {
  issue_pending();
  bool late = false;  // the deadline passed; one more poll decides (Transport::poll_until says why)
  for (uint32_t polls = 0;; ++polls) {
    const cudaError_t state = cudaStreamQuery(stream_);
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) RINGDP_CUDA_CHECK(state);
    check_async();
    if (late) {
      on_stuck();
      expire();
    }
    if ((polls & 255u) == 255u) late = deadline_passed();
  }
}

void CudaStreamTransport::corrupt_byte(void* p) {
  issue_pending();
  kernels::xor_byte_cuda(p, 0x40, stream_);
}

cudaEvent_t CudaStreamTransport::acquire_event() {
  std::lock_guard lock(events_mutex_);
  if (!spare_events_.empty()) {
    cudaEvent_t e = spare_events_.back();
    spare_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  RINGDP_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  all_events_.push_back(e);
  return e;
}

void CudaStreamTransport::release_event(cudaEvent_t event) {
  std::lock_guard lock(events_mutex_);
  spare_events_.push_back(event);
}

void CudaStreamTransport::begin_collective(void* caller_stream, void* ready) {
  activate();
  if (ready)
    RINGDP_CUDA_CHECK(cudaStreamWaitEvent(stream_, static_cast<cudaEvent_t>(ready), 0));
  else
    wait_for_compute(static_cast<cudaStream_t>(caller_stream));
  if (!start_) start_ = acquire_event();
  RINGDP_CUDA_CHECK(cudaEventRecord(start_, stream_));
}

void CudaStreamTransport::end_collective(const std::string& what, std::chrono::milliseconds timeout,
                                         bool blocking, void* caller_stream) {
  if (blocking)
    synchronize();
  else
    join_caller(what, timeout, static_cast<cudaStream_t>(caller_stream));
}

void CudaStreamTransport::join_caller(const std::string& what, std::chrono::milliseconds timeout,
                                      cudaStream_t caller) {
  issue_pending();
  cudaEvent_t done = acquire_event();
  std::unique_lock lock(mutex_);
  RINGDP_CUDA_CHECK(cudaEventRecord(done, stream_));
  RINGDP_CUDA_CHECK(cudaStreamWaitEvent(caller, done, 0));
  outstanding_.push_back({std::exchange(start_, nullptr), done, Clock::now(), timeout, false, {}, what});
  if (!watchdog_.joinable()) watchdog_ = std::thread([this] { watch(); });
  lock.unlock();
  wake_.notify_one();
}

void CudaStreamTransport::watch() {
  std::unique_lock lock(mutex_);
  bool device_set = false;
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(outstanding_.empty() ? 1000 : 10));
    if (outstanding_.empty()) continue;
    if (!device_set) {
      cudaSetDevice(device_);
      device_set = true;
    }
    std::string failure;
    try {
      check_async();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    while (failure.empty() && !outstanding_.empty()) {
      Outstanding& front = outstanding_.front();
      const auto now = Clock::now();
      if (!front.started && (!front.start || cudaEventQuery(front.start) == cudaSuccess)) {
        front.started = true;
        front.started_at = front.start ? now : front.joined;
      }
      const cudaError_t state = cudaEventQuery(front.done);
      if (state == cudaSuccess) {
        if (front.start) release_event(front.start);
        release_event(front.done);
        outstanding_.pop_front();
        continue;
      }
      if (state != cudaErrorNotReady) {
        failure =
            front.what + " failed on the GPU: " + cudaGetErrorName(state) + ": " + cudaGetErrorString(state);
      } else if (front.started && now > front.started_at + front.timeout) {
        failure = front.what + " did not finish on the GPU within the collective timeout (RINGDP_TIMEOUT)";
      } else if (!front.started && now > front.joined + 4 * front.timeout) {
        failure = front.what +
                  " did not even start on the GPU within 4 collective timeouts (RINGDP_TIMEOUT): the work "
                  "enqueued before it (the caller's computation, or an earlier collective) has not finished";
      }
      break;  // completion is in stream order: later ones cannot be done before this one
    }
    if (!failure.empty()) {
      // No on_stuck() here: this thread must not touch NCCL or MPI while the owner may be in them.
      std::fprintf(stderr, "ringdp: rank %d: %s; ending the job\n", rank(), failure.c_str());
      abort_job_from_thread(1);
    }
  }
}

}  // namespace ringdp::comm
#endif

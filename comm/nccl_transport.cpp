// Implements comm/nccl_transport.h (the contract is documented there). Tested by tests/mpi/test_mpi_device_transports.cpp (several ranks, NCCL stand-in), tests/cuda/test_nccl_local.cpp and tests/gpu/device_check.sh (on a GPU).
#include "comm/nccl_transport.h"

#if RINGDP_HAVE_NCCL || defined(RINGDP_NCCL_EMULATOR)  // the emulator: tests/mpi/nccl_emu
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "comm/mpi_runtime.h"
#include "kernels/cuda/cuda_check.h"

namespace ringdp::comm {

void nccl_check(ncclResult_t result, const char* call, const char* file, int line) {
  if (result == ncclSuccess || result == ncclInProgress) return;
  std::string hint;
  const char* last = ncclGetLastError(nullptr);
  if (last && std::strstr(last, "Duplicate GPU")) {
    hint = " (more ranks than GPUs on this node: run fewer ranks, or use --backend mpi, whose CUDA path stages "
           "through host memory; NCCL 2.30+ also allows several ranks per GPU with NCCL_MULTI_RANK_GPU_ENABLE=1)";
  }
  detail::throw_check_failure(file, line, nullptr,
                              detail::concat("NCCL call `", call, "` failed on rank ", launcher_rank(), ": ",
                                             ncclGetErrorString(result), last && *last ? " - " : "",
                                             last ? last : "", hint));
}

std::string nccl_version() {
  int version = 0;
  ncclGetVersion(&version);
  // NCCL ≥ 2.9 encodes major·10000 + minor·100 + patch.
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." + std::to_string(version % 100);
}

NcclTransport::NcclTransport(int rank, int size, int local_rank,
                             const std::function<void(void*, size_t)>& broadcast_id, std::chrono::milliseconds timeout)
    : CudaStreamTransport(local_rank, "the NCCL backend"), rank_(rank), size_(size) {
  ncclUniqueId id;
  if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  broadcast_id(&id, sizeof id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // returns at once; we poll, so a stuck init hits the deadline
  NCCL_CHECK(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config));
  const auto deadline = Clock::now() + timeout;
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) {
    NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
    if (state == ncclInProgress) {
      if (Clock::now() > deadline) {
        ncclCommAbort(comm_);
        RINGDP_FAIL("NCCL initialisation did not finish within ", timeout.count() / 1000.0, " s on rank ", rank_);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  NCCL_CHECK(state);
  CUDA_CHECK(cudaMalloc(&signal_byte_, 2));
  const char* debug = std::getenv("RINGDP_DEBUG");
  if (debug && rank_ == 0 && (std::strcmp(debug, "INFO") == 0 || std::strcmp(debug, "DETAIL") == 0)) {
    std::fprintf(stderr, "ringdp: NCCL %s, %d ranks, rank 0 on cuda:%d\n", nccl_version().c_str(), size_, device_);
  }
}

NcclTransport::~NcclTransport() {
  stop_watchdog();
  if (stream_) cudaStreamSynchronize(stream_);
  if (comm_) ncclCommDestroy(comm_);
  if (signal_byte_) cudaFree(signal_byte_);
}

Request NcclTransport::isend(int peer, const void* data, size_t bytes, int) {
  // A zero-length message still has to arrive (the barrier's signals): one byte stands in.
  if (bytes == 0) return Request{(pending_.push_back({true, peer, signal_byte_, 1}), pending_.size())};
  pending_.push_back({true, peer, const_cast<void*>(data), bytes});
  return Request{pending_.size()};
}

Request NcclTransport::irecv(int peer, void* data, size_t bytes, int) {
  if (bytes == 0) return Request{(pending_.push_back({false, peer, static_cast<char*>(signal_byte_) + 1, 1}), pending_.size())};
  pending_.push_back({false, peer, data, bytes});
  return Request{pending_.size()};
}

void NcclTransport::flush() {
  if (pending_.empty()) return;
  NCCL_CHECK(ncclGroupStart());
  for (const Pending& p : pending_) {
    if (p.send) NCCL_CHECK(ncclSend(p.data, p.bytes, ncclUint8, p.peer, comm_, stream_));
    else NCCL_CHECK(ncclRecv(p.data, p.bytes, ncclUint8, p.peer, comm_, stream_));
  }
  NCCL_CHECK(ncclGroupEnd());
  pending_.clear();
}

void NcclTransport::wait_all(std::span<Request> requests) {
  // Ordering on the stream is the wait: whatever is enqueued next runs after the transfers.
  flush();
  for (Request& r : requests) r.handle = 0;
}

bool NcclTransport::test(Request& request) {
  flush();
  const cudaError_t state = cudaStreamQuery(stream_);
  if (state == cudaErrorNotReady) return false;
  CUDA_CHECK(state);
  request.handle = 0;
  return true;
}

void NcclTransport::reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) {
  flush();
  kernels::reduce_into_cuda(dst, src, count, dtype, op, stream_);
}

void NcclTransport::copy(void* dst, const void* src, size_t bytes) {
  flush();
  if (bytes && dst != src) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void NcclTransport::check_async() {
  if (!comm_) return;
  ncclResult_t async = ncclSuccess;
  NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
  NCCL_CHECK(async);
}

void NcclTransport::on_stuck() {
  if (comm_) ncclCommAbort(comm_);
  comm_ = nullptr;
}

}  // namespace ringdp::comm
#endif

// Implements comm/transport/cuda/nccl_transport.h (the contract is documented there). Tested by
// tests/mpi/test_mpi_device_transports.cpp (several ranks, NCCL stand-in), tests/cuda/test_nccl_local.cpp and
// tests/gpu/device_check.sh (on a GPU).
#include "comm/transport/cuda/nccl_transport.h"

#include "core/debug_level.h"
#include "core/settings.h"

#if RINGDP_HAVE_NCCL || defined(RINGDP_NCCL_EMULATOR)  // the emulator: tests/doubles/nccl
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "comm/bootstrap/mpi_runtime.h"
#include "comm/transport/cuda/native_nccl.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/elementwise.h"

namespace ringdp::comm {

void nccl_check(ncclResult_t result, const char* call, const char* file, int line) {
  if (result == ncclSuccess) return;
  std::string hint;
  const char* last = ncclGetLastError(nullptr);
  if (result == ncclInProgress) {
    hint = " (a non-blocking call left in progress: complete it with NcclTransport::settle)";
  } else if (last && std::strstr(last, "Duplicate GPU")) {
    hint =
        " (more ranks than GPUs on this node: run fewer ranks, or use --backend mpi, whose CUDA path stages "
        "through host memory; NCCL 2.30+ also allows several ranks per GPU with "
        "NCCL_MULTI_RANK_GPU_ENABLE=1)";
  }
  detail::throw_check_failure(
      file, line, nullptr,
      detail::concat("NCCL call `", call, "` failed on rank ", launcher_rank(), ": ",
                     ncclGetErrorString(result), last && *last ? " - " : "", last ? last : "", hint));
}

std::string nccl_version() {
  int version = 0;
  ncclGetVersion(&version);
  // NCCL ≥ 2.9 encodes major·10000 + minor·100 + patch.
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

NcclTransport::NcclTransport(int rank, int size, int device,
                             const std::function<void(void*, size_t)>& broadcast_id,
                             std::chrono::milliseconds timeout)
    : CudaStreamTransport(device, "the NCCL backend"), rank_(rank), size_(size) {
  ncclUniqueId id;
  if (rank_ == 0) RINGDP_NCCL_CHECK(ncclGetUniqueId(&id));
  broadcast_id(&id, sizeof id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // see the header: every call that can return ncclInProgress is settled
  const ncclResult_t started = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
  if (started != ncclInProgress) RINGDP_NCCL_CHECK(started);
  const auto init_deadline = Clock::now() + timeout;
  if (!poll_until_settled([&] { return Clock::now() > init_deadline; }, "NCCL initialisation", __FILE__,
                          __LINE__)) {
    ncclCommAbort(comm_);
    comm_ = nullptr;
    RINGDP_FAIL("NCCL initialisation did not finish within ", timeout.count() / 1000.0, " s on rank ", rank_,
                " (a rank that never started, or a network NCCL cannot use: NCCL_DEBUG=INFO says more)");
  }
  RINGDP_CUDA_CHECK(cudaMalloc(&signal_byte_, 2));
  RINGDP_CUDA_CHECK(cudaStreamCreateWithFlags(&reduce_stream_, cudaStreamNonBlocking));
  RINGDP_CUDA_CHECK(cudaEventCreateWithFlags(&reduce_done_, cudaEventDisableTiming));
  RINGDP_CUDA_CHECK(cudaEventCreateWithFlags(&transfers_now_, cudaEventDisableTiming));
  if (rank_ == 0 && debug_level() != DebugLevel::off) {
    std::fprintf(stderr, "ringdp: NCCL %s, %d ranks, rank 0 on cuda:%d\n", nccl_version().c_str(), size_,
                 device_);
  }
}

NcclTransport::~NcclTransport() {
  stop_watchdog();
  if (reduce_stream_) cudaStreamSynchronize(reduce_stream_);
  if (stream_) cudaStreamSynchronize(stream_);
  if (comm_) {
    // Finalize flushes the communicator's work and settles (every rank finalizes); only then
    // does destroy free it without blocking. One that does not settle in time is aborted.
    // A destructor must not throw: an asynchronous error while finalizing aborts instead.
    const ncclResult_t finalizing = ncclCommFinalize(comm_);
    bool settled = false;
    try {
      const auto end = Clock::now() + destroy_timeout_;
      settled =
          (finalizing == ncclSuccess || finalizing == ncclInProgress) &&
          poll_until_settled([end] { return Clock::now() > end; }, "ncclCommFinalize", __FILE__, __LINE__);
    } catch (const Error&) {
    }
    if (settled)
      ncclCommDestroy(comm_);
    else
      ncclCommAbort(comm_);
  }
  if (signal_byte_) cudaFree(signal_byte_);
  for (cudaEvent_t e : group_events_) cudaEventDestroy(e);
  if (reduce_done_) cudaEventDestroy(reduce_done_);
  if (transfers_now_) cudaEventDestroy(transfers_now_);
  if (reduce_stream_) cudaStreamDestroy(reduce_stream_);
}

bool NcclTransport::poll_until_settled(const std::function<bool()>& expired, const char* call,
                                       const char* file, int line) {
  for (uint32_t polls = 0;; ++polls) {
    ncclResult_t state = ncclSuccess;
    RINGDP_NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
    if (state != ncclInProgress) {
      nccl_check(state, call, file, line);
      return true;
    }
    if ((polls & 63u) == 63u && expired()) return false;
    std::this_thread::yield();
  }
}

void NcclTransport::settle(ncclResult_t result, const char* call, const char* file, int line) {
  // Bounded by the collective's deadline: an operation that cannot even be enqueued (a peer
  // that never connects) ends the job like one stuck on the GPU.
  if (result == ncclInProgress &&
      !poll_until_settled([this] { return deadline_passed(); }, call, file, line)) {
    on_stuck();
    expire();
  }
  if (result != ncclInProgress) nccl_check(result, call, file, line);
}

Request NcclTransport::post(const Pending& p) {
  if (!ops_.empty() && issued_ == ops_.size()) {  // everything of this batch is issued: a new one
    ops_.clear();
    issued_ = 0;
    groups_ = 0;
    lazy_ = lazy_decided_ = joined_ = false;
    ++batch_;
  }
  ops_.push_back({p, -1});
  return Request{(static_cast<uintptr_t>(batch_) << 32) | ops_.size()};
}

Request NcclTransport::isend(int peer, const void* data, size_t bytes, int) {
  // A zero-length message still has to arrive (the barrier's signals): one byte stands in.
  if (bytes == 0) return post({true, peer, signal_byte_, 1});
  return post({true, peer, const_cast<void*>(data), bytes});
}

Request NcclTransport::irecv(int peer, void* data, size_t bytes, int) {
  if (bytes == 0) return post({false, peer, static_cast<char*>(signal_byte_) + 1, 1});
  return post({false, peer, data, bytes});
}

void NcclTransport::join_reductions() {
  if (!reductions_pending_) return;
  RINGDP_CUDA_CHECK(cudaEventRecord(reduce_done_, reduce_stream_));
  RINGDP_CUDA_CHECK(cudaStreamWaitEvent(stream_, reduce_done_, 0));
  reductions_pending_ = false;
}

void NcclTransport::flush(size_t upto) {
  if (issued_ == ops_.size()) return;
  if (upto != kAll && !lazy_decided_) {
    // The batch's first wait. Receives from one peer with no send posted yet are a forwarding
    // rank (the chain broadcast, the tree's gather): issue them as they are waited, so each
    // forward joins the next receive's group instead of queueing behind every receive.
    lazy_decided_ = true;
    int peer = -1;
    lazy_ = !ops_[upto].p.send;
    for (const Op& op : ops_) {
      if (op.group >= 0) continue;
      if (op.p.send || (peer >= 0 && op.p.peer != peer)) lazy_ = false;
      peer = op.p.peer;
    }
  }
  sends_.clear();
  receives_.clear();
  bool has_send = false;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Op& op = ops_[i];
    if (op.group >= 0) continue;
    // Lazily: every posted send (the algorithm has its data), receives up to the waited one.
    if (lazy_ && upto != kAll && !op.p.send && i > upto) continue;
    (op.p.send ? sends_ : receives_).push_back(i);
    has_send = has_send || op.p.send;
  }
  if (sends_.empty() && receives_.empty()) return;
  // Before the batch's first transfers: the transfer stream waits for the reductions so far,
  // since this step receives into what they read and sends what they produced. Later receives of
  // the same batch land in segments no reduction of it reads yet; a later send may carry one's result.
  if (!joined_ || has_send) {
    join_reductions();
    joined_ = true;
  }
  int send_peer = -1, receive_peer = -1;
  bool exchange = !lazy_ || upto == kAll;
  for (size_t i : sends_) {
    if (send_peer >= 0 && ops_[i].p.peer != send_peer) exchange = false;
    send_peer = ops_[i].p.peer;
  }
  for (size_t i : receives_) {
    if (receive_peer >= 0 && ops_[i].p.peer != receive_peer) exchange = false;
    receive_peer = ops_[i].p.peer;
  }
  // Segment k's send and receive pair up across the ring: every rank numbers a chunk's segments
  // the same way, so group k here meets group k of both neighbours and no group waits on a later
  // one. Otherwise (a lazy forward, or sends and receives to several peers) one group.
  const size_t groups = exchange ? std::max(sends_.size(), receives_.size()) : 1;
  while (group_events_.size() < static_cast<size_t>(groups_) + groups) {
    cudaEvent_t e = nullptr;
    RINGDP_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    group_events_.push_back(e);
  }
  auto issue = [this](size_t i, int group) {
    Op& op = ops_[i];
    if (op.p.send)
      RINGDP_NCCL_CHECK(ncclSend(op.p.data, op.p.bytes, ncclUint8, op.p.peer, comm_, stream_));
    else
      RINGDP_NCCL_CHECK(ncclRecv(op.p.data, op.p.bytes, ncclUint8, op.p.peer, comm_, stream_));
    op.group = group;
    ++issued_;
  };
  for (size_t g = 0; g < groups; ++g) {
    const int group = groups_ + static_cast<int>(g);
    RINGDP_NCCL_CHECK(ncclGroupStart());
    if (!exchange) {
      for (size_t i : receives_) issue(i, group);
      for (size_t i : sends_) issue(i, group);
    } else {
      if (g < receives_.size()) issue(receives_[g], group);
      if (g < sends_.size()) issue(sends_[g], group);
    }
    // Non-blocking: the group reaches the stream only once settled, so the event comes after it.
    RINGDP_NCCL_SETTLE(ncclGroupEnd());
    RINGDP_CUDA_CHECK(cudaEventRecord(group_events_[static_cast<size_t>(group)], stream_));
  }
  groups_ += static_cast<int>(groups);
  latest_event_ = group_events_[static_cast<size_t>(groups_ - 1)];
  dependency_ = nullptr;  // new transfers: a reduction now waits for the groups it is told about
}

void NcclTransport::wait_all(std::span<Request> requests) {
  // Ordering on the streams is the wait: the host does not block. A reduction enqueued next
  // waits for the last of these requests' groups, not for the whole step.
  auto index_of = [](const Request& r) { return static_cast<size_t>((r.handle & 0xffffffffu) - 1); };
  auto in_batch = [this](const Request& r) { return r.handle != 0 && (r.handle >> 32) == batch_; };
  size_t upto = kAll;
  for (const Request& r : requests)
    if (in_batch(r)) upto = upto == kAll ? index_of(r) : std::max(upto, index_of(r));
  flush(upto);
  // The latest group among them; a request of an older batch is before every group issued since.
  int latest = -1;
  for (Request& r : requests) {
    if (r.handle == 0) continue;
    latest = std::max(latest, in_batch(r) ? ops_[index_of(r)].group : groups_);
    r.handle = 0;
  }
  if (latest >= 0)
    dependency_ = latest >= groups_ ? latest_event_ : group_events_[static_cast<size_t>(latest)];
}

bool NcclTransport::test(Request& request) {
  issue_pending();
  const cudaError_t state = cudaStreamQuery(stream_);
  if (state == cudaErrorNotReady) return false;
  RINGDP_CUDA_CHECK(state);
  request.handle = 0;
  return true;
}

void NcclTransport::issue_pending() {
  flush(kAll);
  join_reductions();
}

void NcclTransport::order_reduction() {
  if (!dependency_) flush(kAll);  // after a wait, its group is issued; otherwise issue everything
  cudaEvent_t after = dependency_;
  if (!after) {  // not after a wait: after everything on the transfer stream so far
    RINGDP_CUDA_CHECK(cudaEventRecord(transfers_now_, stream_));
    after = transfers_now_;
  }
  RINGDP_CUDA_CHECK(cudaStreamWaitEvent(reduce_stream_, after, 0));
  reductions_pending_ = true;
}

void NcclTransport::reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) {
  order_reduction();
  kernels::reduce_into_cuda(dst, src, count, dtype, op, reduce_stream_);
}

void NcclTransport::corrupt_byte(void* p) {
  order_reduction();
  kernels::xor_byte_cuda(p, 0x40, reduce_stream_);
}

void NcclTransport::copy(void* dst, const void* src, size_t bytes) {
  issue_pending();
  dependency_ = nullptr;
  if (bytes && dst != src)
    RINGDP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void NcclTransport::check_async() {
  if (!comm_) return;
  ncclResult_t async = ncclSuccess;
  RINGDP_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
  if (async != ncclInProgress) RINGDP_NCCL_CHECK(async);  // in progress: the owner is settling a call
}

void NcclTransport::on_stuck() {
  // The owner's thread (see the base class): the watchdog, which polls the communicator for
  // asynchronous errors, is stopped first, so nothing else uses the communicator being freed.
  stop_watchdog();
  if (comm_) ncclCommAbort(comm_);
  comm_ = nullptr;
}

native_nccl::Endpoint NcclTransport::endpoint() {
  return {comm_,
          stream(),
          rank_,
          size_,
          this,
          [](void* owner, ncclResult_t result, const char* call, const char* file, int line) {
            static_cast<NcclTransport*>(owner)->settle(result, call, file, line);
          }};
}

void NcclTransport::native_all_reduce(const void* input, void* output, int64_t count, DType dtype,
                                      ReduceOp op) {
  native_nccl::all_reduce(endpoint(), input, output, count, dtype, op);
}

void NcclTransport::native_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                                  int root) {
  native_nccl::reduce(endpoint(), input, output, count, dtype, op, root);
}

void NcclTransport::native_broadcast(void* buffer, int64_t count, DType dtype, int root) {
  native_nccl::broadcast(endpoint(), buffer, count, dtype, root);
}

void NcclTransport::native_all_gather(const void* input, void* output, int64_t chunk_count, DType dtype) {
  native_nccl::all_gather(endpoint(), input, output, chunk_count, dtype);
}

void NcclTransport::native_reduce_scatter(const void* input, void* output, int64_t chunk_count, DType dtype,
                                          ReduceOp op) {
  native_nccl::reduce_scatter(endpoint(), input, output, chunk_count, dtype, op);
}

void NcclTransport::native_exchange(const BlockExchange& exchange) {
  native_nccl::exchange(endpoint(), exchange);
}

}  // namespace ringdp::comm
#endif

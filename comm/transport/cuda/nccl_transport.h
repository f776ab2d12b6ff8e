// Transport over NCCL point-to-point, for CUDA tensors. The algorithms in comm/ run unchanged:
// isend/irecv only record the operation; the first wait of a step issues what was recorded on
// the transfer stream. When the step is an exchange (every send to one peer, every receive from
// one peer: the ring's segments, recursive doubling, the barrier), segment k's send and receive
// form group k, and an event after each group lets the reduction of segment k run on a second
// stream while segment k+1 is on the wire; any other pattern is one group. A rank that first
// waits on receives from one peer with no send posted (the chain broadcast, a tree's gather)
// has them issued one by one as it waits, each with the sends posted since: segment k's
// forward then shares a group with segment k+1's receive and the chain pipelines, where
// issuing every receive first made each rank forward only once the whole buffer had arrived.
// Before the next step's
// transfers (and before a copy, a join or a sync) the transfer stream waits for the reductions,
// since the next step sends what they produced and receives into what they read. A whole
// collective is enqueued without host round trips. The stream, its join with the caller's and the watchdog
// are CudaStreamTransport's; a stuck stream gets ncclCommAbort before the report. Bootstrap: rank 0
// creates the ncclUniqueId and the host transport broadcasts it (Transport::bootstrap_broadcast,
// passed in by Routes); the rank's GPU is the communicator's
// choice (Communicator::device_index).
//
// The communicator is non-blocking (config.blocking = 0), and every call that may return
// ncclInProgress (init, ncclGroupEnd, each collective, ncclCommFinalize) is settled: polled with
// ncclCommGetAsyncError until it reports something else, against the deadline, before any other
// call on the communicator and before an event is recorded after it. Why not blocking: the
// first send to a peer, like init, connects to it, and a blocking call waits for a peer that may
// never come, past any deadline; polled, it ends the job with a message. The cost is a host
// round trip per group (the enqueue by NCCL's thread, microseconds), not a wait for the transfer.
#pragma once

#include "comm/transport/cuda/cuda_stream_transport.h"
#include "comm/transport/cuda/native_nccl.h"
#include "comm/transport/transport.h"
#include "config.h"

#if RINGDP_HAVE_NCCL || defined(RINGDP_NCCL_EMULATOR)  // the emulator: tests/doubles/nccl
#include <cuda_runtime.h>
#include <nccl.h>

#include <functional>
#include <string>

namespace ringdp::comm {

class NcclTransport final : public CudaStreamTransport {
 public:
  /// Every rank must call it. `broadcast_id` sends rank 0's ncclUniqueId to all ranks (MPI_Bcast
  /// under mpirun; nothing in a world of one). Throws a clear Error on failure (the "Duplicate
  /// GPU" case explained).
  NcclTransport(int rank, int size, int device, const std::function<void(void*, size_t)>& broadcast_id,
                std::chrono::milliseconds timeout);
  ~NcclTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  ncclComm_t comm() const { return comm_; }
  /// Completes a call that may have returned ncclInProgress (see the file comment), then
  /// throws as nccl_check does if it failed. Past the deadline: on_stuck() and expire().
  void settle(ncclResult_t result, const char* call, const char* file, int line);

  Request isend(int peer, const void* data, size_t bytes, int tag) override;
  Request irecv(int peer, void* data, size_t bytes, int tag) override;
  void wait_all(std::span<Request> requests) override;  // enqueues; does not block the host
  bool test(Request& request) override;
  void reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void corrupt_byte(void* p) override;  // on the reduction stream, where the segment is read next

  // NCCL's own collectives (comm/transport/cuda/native_nccl.h) on the transfer stream; at world size 1 too.
  void native_all_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op) override;
  void native_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                     int root) override;
  void native_broadcast(void* buffer, int64_t count, DType dtype, int root) override;
  void native_all_gather(const void* input, void* output, int64_t chunk_count, DType dtype) override;
  void native_reduce_scatter(const void* input, void* output, int64_t chunk_count, DType dtype,
                             ReduceOp op) override;
  void native_exchange(const BlockExchange& exchange) override;

 private:
  /// What NCCL's own collectives are given of this transport (native_nccl::Endpoint).
  native_nccl::Endpoint endpoint();
  /// Polls ncclCommGetAsyncError until the state is not ncclInProgress, then throws as
  /// nccl_check does (naming `call` at file:line) if it is an error; false if `expired()` first.
  bool poll_until_settled(const std::function<bool()>& expired, const char* call, const char* file, int line);
  void issue_pending() override;
  void check_async() override;  // ncclCommGetAsyncError
  void on_stuck() override;  // ncclCommAbort: unblocks the stream so the process can end
  struct Pending {
    bool send;
    int peer;
    void* data;
    size_t bytes;
  };
  struct Op {
    Pending p;
    int group;  // its group within the batch; -1 while not issued
  };
  static constexpr size_t kAll = static_cast<size_t>(-1);
  Request post(const Pending& p);
  /// Issues recorded sends and receives: all of them (kAll), or what a wait for op `upto` needs
  /// (see the file comment for the grouping).
  void flush(size_t upto);
  /// Makes the transfer stream wait for every reduction enqueued so far.
  void join_reductions();
  /// Makes the reduction stream wait for the last waited group (or all transfers so far): what
  /// is enqueued on it next reads what they received.
  void order_reduction();

  std::vector<Op> ops_;  // the batch: posted since everything before was issued
  size_t issued_ = 0;
  int groups_ = 0;  // groups issued in this batch
  bool lazy_decided_ = false, lazy_ = false, joined_ = false;
  uint64_t batch_ = 0;
  std::vector<size_t> sends_, receives_;  // flush()'s selection, kept to reuse its memory
  std::vector<cudaEvent_t> group_events_;  // event after group g of the batch
  cudaEvent_t latest_event_ = nullptr;  // after the latest group issued
  cudaStream_t reduce_stream_ = nullptr;  // reductions, so segment k reduces while k+1 arrives
  cudaEvent_t reduce_done_ = nullptr, transfers_now_ = nullptr;
  bool reductions_pending_ = false;  // reductions enqueued since the last join
  cudaEvent_t dependency_ = nullptr;  // what the next reduction waits for: the last waited group
  ncclComm_t comm_ = nullptr;
  void* signal_byte_ = nullptr;  // device byte that zero-length messages carry
  int rank_ = 0, size_ = 1;
  std::chrono::milliseconds destroy_timeout_{30000};
};

/// NCCL's version as "2.28.9".
std::string nccl_version();
/// Throws ringdp::Error naming the call and NCCL's error string.
void nccl_check(ncclResult_t result, const char* call, const char* file, int line);

}  // namespace ringdp::comm

#define RINGDP_NCCL_CHECK(call)                                                  \
  do {                                                                           \
    const ncclResult_t ringdp_nccl_status = (call);                              \
    if (__builtin_expect(ringdp_nccl_status != ncclSuccess, 0))                  \
      ::ringdp::comm::nccl_check(ringdp_nccl_status, #call, __FILE__, __LINE__); \
  } while (0)
/// In NcclTransport: a call that may return ncclInProgress.
#define RINGDP_NCCL_SETTLE(call) settle((call), #call, __FILE__, __LINE__)

#endif

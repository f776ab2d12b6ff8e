// Folder comm/transport/ucx/: the transport over UCX's tag-matched messages (UCP), the field's own
// point-to-point library (what UCC's tl/ucp and torch-ucc stand on): shared memory and
// cross-memory attach within a host, TCP across hosts, InfiniBand where present, chosen by UCX
// from UCX_TLS and UCX_NET_DEVICES, which it reads itself.
//
// UcxTransport: ringdp's messages as ucp_tag_send_nbx / ucp_tag_recv_nbx on one UCP worker per
// communicator, with an endpoint to every peer made from worker addresses exchanged out of band
// (comm/bootstrap/out_of_band.h): over the MPI transport it is made beside (RINGDP_TRANSPORT=ucx
// under mpirun), or over the key-value store of a launcher without MPI (torchrun, mp.spawn).
// A UCP tag is 64 bits: the top bit says a user's send/recv, the next 31 carry ringdp's tag
// (comm/transport/envelope.h), the low 32 the sender's rank. A collective's receive matches the
// next message from its peer whatever ringdp tag it carries, then compares that tag and the length
// with what it expected: the envelope check of the MPI transport, so ranks that called different
// collectives or counts are told at the first message. UCX cuts a message longer than its receive
// (UCS_ERR_MESSAGE_TRUNCATED) and never writes past the buffer, so no two-part protocol is needed.
// Every wait polls ucp_worker_progress under the collective's deadline and asks ringdp's departure
// notices whether a peer has left, as over MPI. UCX's own peer error handling is asked for only on
// the endpoints to peers on another machine: it rules out UCX's shared-memory transports
// (ucx_transport.cpp says why), which those peers cannot use anyway. The
// library's own collectives, the shared-memory slots and bootstrap broadcasts stay the MPI transport's: UCX
// has no collectives; a job without MPI has no `--algo native`, and its slots are a segment of its own
// (set_shared_slots, comm/transport/shm/shm_segment.h).
// Tested by tests/mpi/ with RINGDP_TRANSPORT=ucx (every collective and algorithm against a
// reference) and tests/cli/bench.sh (the envelope cases).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "comm/bootstrap/out_of_band.h"
#include "comm/transport/transport.h"
#include "comm/transport/ucx/ucx_requests.h"
#include "config.h"

#if RINGDP_HAVE_UCX
#include <ucp/api/ucp.h>

namespace ringdp::comm {

class UcxTransport final : public Transport {
 public:
  /// Over the ranks of `bootstrap` (collective over it): exchanges worker addresses through its
  /// collectives and keeps it for what UCX does not do (the native collectives, shared slots).
  /// Every endpoint is connected within `timeout`, or an Error names the ranks it could not reach.
  UcxTransport(std::unique_ptr<Transport> bootstrap, std::chrono::milliseconds timeout);
  /// Without MPI: over the ranks of `out_of_band` (collective over them), which it keeps for
  /// bootstrap broadcasts and groups' exchanges; `yield`: give the core away between polls.
  /// `reported`, by rank: the peers whose endpoints ask UCX to report their failure
  /// (peer_failure), those known to be on another machine (no shared memory is lost there). The
  /// world's transport only: the hierarchical path's host and cross transports rely on its
  /// reports, since the departures progress its worker in every wait.
  UcxTransport(std::unique_ptr<OutOfBand> out_of_band, std::chrono::milliseconds timeout, bool yield,
               std::vector<bool> reported = {});
  /// Flushes the endpoints for a bounded time (2 s), then lets go of what is still pending:
  /// nothing here waits for a peer that may be gone.
  ~UcxTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  /// The exchange this transport was built from: over MPI's collectives, or a store's.
  OutOfBand& out_of_band() { return *out_of_band_; }

  Request isend(int peer, const void* data, size_t bytes, int tag) override;
  Request irecv(int peer, void* data, size_t bytes, int tag) override;
  void wait_all(std::span<Request> requests) override;
  bool test(Request& request) override;
  void reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void progress() override { ucp_worker_progress(worker_); }
  /// Cancels the collective receives still posted and ends the collective sends still under way
  /// (bounded), so that nothing a failed collective posted touches its tensors later; a user's
  /// asynchronous sends and receives are left to their Work.
  void abandon_pending() override;
  int tag_upper_bound() const override {
    return bootstrap_ ? bootstrap_->tag_upper_bound() : Transport::tag_upper_bound();
  }
  bool yields_when_idle() const override { return bootstrap_ ? bootstrap_->yields_when_idle() : yield_; }

  // The MPI transport's: UCX has no collectives of its own (an Error without MPI).
  void native_all_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op) override;
  void native_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                     int root) override;
  void native_broadcast(void* buffer, int64_t count, DType dtype, int root) override;
  void native_all_gather(const void* input, void* output, int64_t chunk_count, DType dtype) override;
  void native_reduce_scatter(const void* input, void* output, int64_t chunk_count, DType dtype,
                             ReduceOp op) override;
  void native_barrier() override;
  void native_exchange(const BlockExchange& exchange) override;
  Transport& native_transport() override { return bootstrap_ ? *bootstrap_ : *this; }
  void bootstrap_broadcast(void* data, size_t bytes) override;
  SharedSlots* shared_slots() override {
    return slots_ ? slots_.get() : bootstrap_ ? bootstrap_->shared_slots() : nullptr;
  }
  /// Without MPI: the slots of a shared-memory segment over this transport's ranks
  /// (comm/transport/shm/shm_segment.h), or null for none.
  void set_shared_slots(std::unique_ptr<SharedSlots> slots);

  /// UCX's version, for RINGDP_DEBUG=INFO and the docs: "1.13.1".
  static std::string version();

  // Departure notices (comm/world/ucx_departures.h): a tag no user or collective message takes
  // (the user bit with ringdp's tag bits all set, beyond any user tag).
  /// Posts a receive of one notice of `bytes` from any rank.
  Request receive_notice(void* data, size_t bytes);
  /// Starts sending a notice to `peer`; `data` must stay alive until notice_done.
  Request send_notice(int peer, const void* data, size_t bytes);
  /// True once `request` (from the two above) is done or failed, releasing UCX's request; for a
  /// receive that completed, `sender` is its sender, else -1. Never blocks, never throws.
  bool notice_done(Request& request, int& sender);
  /// Cancels a notice's receive or send and releases it.
  void cancel_notice(Request& request);
  /// UCX's reason once the endpoint to `peer` failed (a peer in `reported` whose connection
  /// ended: its process was killed, or its machine or the network failed), else "". Seen as the
  /// worker is progressed.
  const std::string& peer_failure(int peer) const { return failures_[static_cast<size_t>(peer)]; }

 private:
  /// The context, the worker, the endpoints, then connect().
  void open(std::chrono::milliseconds timeout);
  /// One empty message from every rank to every rank, which wires the endpoints up.
  void connect(std::chrono::milliseconds timeout);
  /// The destructor's work, also run when the constructor throws.
  void release();
  /// The MPI transport whose collectives stand in for UCX's missing ones, or an Error without MPI.
  Transport& library();
  /// True once the request is done; throws on a failed one, or a receive whose tag or length
  /// differs from what was posted. Releases UCX's request when done.
  bool finish(Request& request);
  /// The error for a receive that completed with `status`, `tag` and `length`, or "".
  std::string check_receive(const Request& request, ucs_status_t status, ucp_tag_t tag, size_t length) const;

  /// What UCX's error callback of one endpoint needs: UCX keeps a pointer to it.
  struct EndpointWatch {
    UcxTransport* transport;
    int peer;
  };
  static void endpoint_failed(void* arg, ucp_ep_h endpoint, ucs_status_t status);

  std::unique_ptr<Transport> bootstrap_;  ///< null without MPI
  std::unique_ptr<OutOfBand> out_of_band_;
  int rank_ = 0, size_ = 1;
  bool yield_ = false;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<ucp_ep_h> endpoints_;
  std::vector<bool> reported_;  ///< by rank: endpoints with UCX's peer error handling
  std::vector<EndpointWatch> watches_;  ///< by rank, never resized once endpoints exist
  std::vector<std::string> failures_;  ///< by rank: UCX's reason, once that endpoint failed
  std::unique_ptr<SharedSlots> slots_;  ///< without MPI only
  UcxRequests pending_;  ///< isend's and irecv's that have not ended
};

}  // namespace ringdp::comm
#endif

// Folder comm/transport/mpi/: the transport over MPI point-to-point, its two-part protocol and
// wire words, and MPI's own collectives (the `native` baseline).
//
// Transport over MPI point-to-point: MPI_Isend, MPI_Irecv and MPI_Testall only. The wait polls
// MPI_Testall so it can check the deadline, yielding the core between polls where ranks share
// cores (set_yield_when_idle).
//
// No payload moves until the receiver knows it fits. A collective's message of up to
// kDirectMaxBytes goes straight to a receive posted with its expected size: MPI sends such a
// message eagerly, and a longer one than was posted is cut and reported (MPI_ERR_TRUNCATE), not
// written past the buffer. A longer message is sent in two parts: a small envelope (its size and
// its collective's tag) on the collectives' communicator, then the payload on a communicator of
// its own. The receiver posts the envelope's receive at once and the payload's only after
// checking the envelope, so ranks that disagree on a count or a collective are stopped before a
// byte of the payload moves. (Open MPI 4.1's single-copy path for messages above its eager size
// had already written a longer message past the receive buffer when MPI_ERR_TRUNCATE came back:
// heap corruption, docs/errors.md.) Tested by tests/cli/bench.sh envelope (MPMD launches with
// mismatched counts and algorithms) and tests/mpi.
#pragma once

#include <memory>
#include <vector>

#include "comm/transport/mpi/two_part_messages.h"
#include "comm/transport/transport.h"
#include "config.h"

#if RINGDP_HAVE_MPI
#include <mpi.h>

namespace ringdp::comm {

/// The largest collective message sent in one part: well under every eager size we know of
/// (Open MPI's shared-memory BTL: 4 KiB; its TCP BTL: 64 KiB; MPICH cuts any message safely).
constexpr size_t kDirectMaxBytes = 1024;

class MpiTransport final : public Transport {
 public:
  /// `user_messages`: whether send/recv's messages travel here (the world's transport; a host's
  /// or a cross-host one carries collectives only, and makes no communicator for them).
  explicit MpiTransport(MPI_Comm comm, bool user_messages = true);
  ~MpiTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MPI_Comm comm() const { return comm_; }
  /// send/recv's communicator (MPI_COMM_NULL without user messages); its largest tag,
  /// tag_upper_bound(), is no user's: the departure notices travel there (comm/world/mpi_departures.h).
  MPI_Comm user_comm() const { return user_comm_; }

  Request isend(int peer, const void* data, size_t bytes, int tag) override;
  Request irecv(int peer, void* data, size_t bytes, int tag) override;
  void wait_all(std::span<Request> requests) override;
  bool test(Request& request) override;
  void reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) override;
  void copy(void* dst, const void* src, size_t bytes) override;

  // MPI_Allreduce and the rest (comm/transport/mpi/native_mpi.h), on the collectives' communicator.
  void native_all_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op) override;
  void native_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                     int root) override;
  void native_broadcast(void* buffer, int64_t count, DType dtype, int root) override;
  void native_all_gather(const void* input, void* output, int64_t chunk_count, DType dtype) override;
  void native_reduce_scatter(const void* input, void* output, int64_t chunk_count, DType dtype,
                             ReduceOp op) override;
  void native_barrier() override;
  void native_exchange(const BlockExchange& exchange) override;
  bool reads_device_memory() const override;  // CUDA-aware MPI (mpi_cuda_aware())
  void bootstrap_broadcast(void* data, size_t bytes) override;  // MPI_Bcast from rank 0
  /// MPI_TAG_UB, or less when RINGDP_TAG_UB says so (to test small bounds: the standard's 32767,
  /// UCX's 2^23 - 1). Every tag posted is checked against it, as a strict MPI would.
  int tag_upper_bound() const override { return tag_ub_; }
  /// Yield the core between polls of a wait: where ranks outnumber cores, a rank that spins
  /// keeps the peer it waits for off the CPU for a whole time slice (about 5 ms per message
  /// with 3 ranks on 2 cores under MPICH, whose ch4 device has no yield setting of its own).
  void set_yield_when_idle(bool yield) { yield_when_idle_ = yield; }
  /// Creates the shared-memory slots over `node` (collective over it; every rank of the job on
  /// one host), where MPI's shared windows allow them (comm/transport/shm/shared_slots.h).
  void enable_shared_slots(MPI_Comm node, size_t slot_bytes, bool yield_while_waiting);
  SharedSlots* shared_slots() override { return slots_.get(); }
  void progress() override;
  bool yields_when_idle() const override { return yield_when_idle_; }

 private:
  void check_envelopes(std::span<Request> requests);
  /// An Error naming the sender when MPI_Test's `rc` says a receive's message was longer than it.
  void check_not_cut(int rc, const Request& request) const;
  /// On one host: throws if a peer this rank waits to receive from announced the same collective
  /// by another algorithm, op or dtype (SharedSlots::check_same_call), which may send nothing.
  void check_peers_calls(std::span<const Request> requests) const;
  /// Posts a collective's message longer than kDirectMaxBytes through two_part_.
  Request post_two_part(int peer, void* data, size_t bytes, int tag, bool receive);
  /// The general wait, for a set with a two-part message in it.
  void wait_two_part(std::span<Request> requests);
  /// True once a two-part request is done; released then.
  bool finish_two_part(Request& request);
  /// Tests one single-part request; true (and the request released) when it is done.
  bool test_one(Request& request);
  /// One MPI_Test of a direct (not two-part) request, not yet null: written back at once, then
  /// checked as check_not_cut and check_envelopes do; a receive from any rank learns its sender.
  bool test_mpi(Request& request);
  /// The tag MPI sees: a user tag without its in-process kUserTagBase mark; checked against tag_ub_.
  int wire_tag(int tag) const;

  MPI_Comm comm_;  // collectives' messages, and the envelopes of two-part ones
  MPI_Comm payload_comm_;  // the payloads of two-part messages
  MPI_Comm user_comm_ =
      MPI_COMM_NULL;  // send/recv of user tags: never matched by a collective's ANY_TAG receive
  int rank_ = 0;
  int size_ = 1;
  int tag_ub_ = 32767;
  bool yield_when_idle_ = false;
  std::unique_ptr<SharedSlots> slots_;  // null unless enable_shared_slots() made them
  std::vector<MPI_Request> waiting_;  // reused by wait_all: no allocation per wait
  std::vector<MPI_Status> statuses_;
  std::vector<char> in_place_copy_;  // native_reduce_scatter's input, when the output lies inside it
  /// The two-part messages in flight (made once both communicators exist).
  std::unique_ptr<TwoPartMessages> two_part_;
};

/// Throws ringdp::Error naming the call, the rank and MPI's error string when rc != MPI_SUCCESS.
void mpi_check(int rc, const char* call, const char* file, int line);

}  // namespace ringdp::comm

/// Tests the return code in place and calls out only on failure: every MPI call made per
/// collective passes through here (docs/benchmarks.md).
#define RINGDP_MPI_CHECK(call)                                             \
  do {                                                                     \
    const int ringdp_mpi_rc = (call);                                      \
    if (__builtin_expect(ringdp_mpi_rc != MPI_SUCCESS, 0))                 \
      ::ringdp::comm::mpi_check(ringdp_mpi_rc, #call, __FILE__, __LINE__); \
  } while (0)

#endif

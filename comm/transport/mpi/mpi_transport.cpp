// Implements comm/transport/mpi/mpi_transport.h (the contract is documented there). Tested by tests/mpi/ and
// tests/cli/bench.sh envelope.
#include "comm/transport/mpi/mpi_transport.h"

#if RINGDP_HAVE_MPI
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>

#include "comm/bootstrap/mpi_runtime.h"
#include "comm/transport/envelope.h"
#include "comm/transport/idle_backoff.h"
#include "comm/transport/mpi/mpi_wire.h"
#include "comm/transport/mpi/native_mpi.h"
#include "comm/transport/shm/shared_slots.h"
#include "comm/transport/shm/shm_space.h"
#include "core/settings.h"

namespace ringdp::comm {

using namespace mpi_wire;

static_assert(sizeof(MPI_Request) <= sizeof(uintptr_t), "MPI_Request must fit in a Request handle");

void mpi_check(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  MPI_Get_processor_name(host, &length);
  detail::throw_check_failure(
      file, line, nullptr,
      detail::concat("MPI call `", call, "` failed on rank ", rank, " (", host, "): ", text));
}

MpiTransport::MpiTransport(MPI_Comm comm, bool user_messages) {
  RINGDP_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  RINGDP_MPI_CHECK(MPI_Comm_dup(comm, &payload_comm_));
  RINGDP_MPI_CHECK(MPI_Comm_set_errhandler(payload_comm_, MPI_ERRORS_RETURN));
  RINGDP_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  if (user_messages) {
    RINGDP_MPI_CHECK(MPI_Comm_dup(comm, &user_comm_));
    RINGDP_MPI_CHECK(MPI_Comm_set_errhandler(user_comm_, MPI_ERRORS_RETURN));
  }
  RINGDP_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  RINGDP_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  int* bound = nullptr;
  int found = 0;
  RINGDP_MPI_CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &bound, &found));
  if (found && bound) tag_ub_ = *bound;
  if (const auto forced = settings::number(settings::Id::tag_ub))
    tag_ub_ = static_cast<int>(std::min<uint64_t>(*forced, static_cast<uint64_t>(tag_ub_)));
  two_part_ = std::make_unique<TwoPartMessages>(comm_, payload_comm_, rank_);
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    MPI_Comm_free(&comm_);
    MPI_Comm_free(&payload_comm_);
    // user_comm_ is never freed: a message sent on it and never received stays queued there, and
    // Open MPI gives a freed communicator's context id to the next one made, whose receive then
    // matched it (torch's destroy_process_group and init again: a stale 111 arrived where 222 was
    // sent; tests/mpi/test_groups.cpp). Freeing it only where this rank used it is no way out:
    // the ranks then disagree on which ids are free, and Open MPI's next MPI_Comm_dup crashed.
    // The cost: one communicator per destroyed Communicator (docs/library.md).
  }
}

int MpiTransport::wire_tag(int tag) const {
  const int wire = tag >= kUserTagBase ? tag - kUserTagBase : tag;
  RINGDP_CHECK(wire <= tag_ub_, "tag ", wire, " exceeds MPI's tag upper bound ", tag_ub_, " (MPI_TAG_UB)");
  return wire;
}

Request MpiTransport::isend(int peer, const void* data, size_t bytes, int tag) {
  RINGDP_CHECK(bytes <= INT_MAX, "one message of ", bytes, " bytes exceeds MPI's int count");
  const bool user = tag >= kUserTagBase;
  RINGDP_CHECK(!user || user_comm_ != MPI_COMM_NULL, "this transport carries collectives only");
  if (!user && bytes > kDirectMaxBytes)
    return post_two_part(peer, const_cast<void*>(data), bytes, tag, false);
  MPI_Request request;
  RINGDP_MPI_CHECK(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, wire_tag(tag),
                             user ? user_comm_ : comm_, &request));
  return from_mpi(request, Request{0, peer, tag, bytes, false});
}

Request MpiTransport::irecv(int peer, void* data, size_t bytes, int tag) {
  RINGDP_CHECK(bytes <= INT_MAX, "one message of ", bytes, " bytes exceeds MPI's int count");
  const bool user = tag >= kUserTagBase;
  RINGDP_CHECK(!user || user_comm_ != MPI_COMM_NULL, "this transport carries collectives only");
  if (!user && bytes > kDirectMaxBytes) return post_two_part(peer, data, bytes, tag, true);
  MPI_Request request;
  // A collective's receive takes any tag, so a message of another collective is seen (and
  // reported) instead of waiting forever for one that never comes.
  RINGDP_CHECK(peer != kAnySource || user, "a collective's receive names its peer");
  RINGDP_MPI_CHECK(MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE,
                             peer == kAnySource ? MPI_ANY_SOURCE : peer, user ? wire_tag(tag) : MPI_ANY_TAG,
                             user ? user_comm_ : comm_, &request));
  return from_mpi(request, Request{0, peer, tag, bytes, true});
}

void MpiTransport::wait_all(std::span<Request> requests) {
  if (requests.empty()) return;
  for (const Request& r : requests)
    if (r.two_part) return wait_two_part(requests);
  waiting_.clear();
  for (const Request& r : requests) waiting_.push_back(to_mpi(r));
  statuses_.resize(waiting_.size());
  int done = 0;
  bool late = false;  // the deadline passed; one more poll decides (Transport::poll_until says why)
  IdleBackoff backoff(yield_when_idle_);
  for (uint32_t polls = 0;; ++polls) {
    const int rc = MPI_Testall(static_cast<int>(waiting_.size()), waiting_.data(), &done, statuses_.data());
    if (rc != MPI_SUCCESS && error_class(rc) == MPI_ERR_IN_STATUS) {
      for (size_t i = 0; i < statuses_.size(); ++i) {
        if (requests[i].receive && error_class(statuses_[i].MPI_ERROR) == MPI_ERR_TRUNCATE) {
          RINGDP_FAIL("rank ", rank_, " expected ", requests[i].bytes, " bytes of ",
                      describe_tag(requests[i].tag), " from rank ", sender(requests[i], statuses_[i]),
                      " and got a longer message: ", length_why(requests[i], false));
        }
      }
    }
    RINGDP_MPI_CHECK(rc);
    if (done) break;
    if (late) expire();
    // A payload this rank's peer is sending may wait for an envelope this rank has not checked yet.
    if (two_part_->receiving()) two_part_->advance();
    const bool slept = backoff.pause();  // MPI_Testall is MPI's progress: nothing to call after a sleep
    // Reading the clock costs ~20 ns; every 256th poll keeps it off the fast path. A sleeping wait
    // polls about once a millisecond: it reads the clock each time, and looks at its peers' calls
    // every 16th.
    if (slept || (polls & 255u) == 255u) late = deadline_passed();
    if ((slept && (polls & 15u) == 15u) || (polls & 1023u) == 1023u) check_peers_calls(requests);
  }
  check_envelopes(requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    const int peer = sender(requests[i], statuses_[i]);
    requests[i] = from_mpi(MPI_REQUEST_NULL);
    requests[i].peer = peer;  // a receive from any rank learns its sender here
  }
}

void MpiTransport::enable_shared_slots(MPI_Comm node, size_t slot_bytes, bool yield_while_waiting) {
  int rank = 0, size = 1;
  RINGDP_MPI_CHECK(MPI_Comm_rank(node, &rank));
  RINGDP_MPI_CHECK(MPI_Comm_size(node, &size));
  check_shm_space(node, SharedSlots::region_bytes(slot_bytes, size),
                  SharedSlots::space_text(slot_bytes, size),
                  detail::concat("lower RINGDP_SHM_SLOT_BYTES (4096 needs ",
                                 shm_bytes_text(SharedSlots::region_bytes(4096, size)),
                                 " per rank), or set RINGDP_SHM_MAX_BYTES=0 for no slots (all-reduces then "
                                 "run over MPI's messages)"));
  void* base = nullptr;
  MPI_Win window = MPI_WIN_NULL;
  RINGDP_MPI_CHECK(MPI_Win_allocate_shared(static_cast<MPI_Aint>(SharedSlots::region_bytes(slot_bytes, size)),
                                           1, MPI_INFO_NULL, node, &base, &window));
  // Plain loads and stores see each other only in the unified memory model. Every rank asks the
  // same MPI, so all agree on whether there are slots.
  int* model = nullptr;
  int found = 0;
  RINGDP_MPI_CHECK(MPI_Win_get_attr(window, MPI_WIN_MODEL, &model, &found));
  if (!found || *model != MPI_WIN_UNIFIED) {
    RINGDP_MPI_CHECK(MPI_Win_free(&window));
    return;
  }
  std::vector<void*> regions(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    MPI_Aint bytes = 0;
    int unit = 0;
    RINGDP_MPI_CHECK(MPI_Win_shared_query(window, r, &bytes, &unit, &regions[static_cast<size_t>(r)]));
  }
  // A passive-target epoch for the window's whole life: MPI's condition for direct access.
  RINGDP_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, window));
  slots_ = std::make_unique<SharedSlots>(rank, std::move(regions), slot_bytes, yield_while_waiting,
                                         [window]() mutable {
                                           // MPI_Win_free is collective and waits for every rank. Unwinding
                                           // from an error, this rank is on its way to MPI_Abort (fail_job),
                                           // and the others may never come: leave the window to the abort.
                                           // (ringdp-train --lr 1000 hung here: rank 0 diverged and freed,
                                           // the others waited.)
                                           if (std::uncaught_exceptions() > 0) return;
                                           int finalized = 0;
                                           MPI_Finalized(&finalized);
                                           if (finalized) return;
                                           MPI_Win_unlock_all(window);
                                           MPI_Win_free(&window);
                                         });
  RINGDP_MPI_CHECK(MPI_Barrier(node));  // every rank's header is zeroed before anyone reads it
}

void MpiTransport::progress() {
  // A probe that matches nothing runs MPI's progress engine and takes no message.
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
}

void MpiTransport::check_envelopes(std::span<Request> requests) {
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    if (!r.receive) continue;
    const MPI_Status& status = statuses_[i];
    // MPI's empty status (any tag, no bytes): the request had completed before this wait.
    if (status.MPI_TAG == MPI_ANY_TAG) continue;
    // A user's message (send/recv) has its own communicator and the tag the user chose: only its
    // length can differ, and a shorter one would leave the rest of the tensor stale, unnoticed.
    const bool user = r.tag >= kUserTagBase;
    RINGDP_CHECK(user || status.MPI_TAG != kEnvelopeTag, "rank ", rank_, " expected ", r.bytes, " bytes of ",
                 describe_tag(r.tag), " from rank ", sender(r, status),
                 " and got the envelope of a message over ", kDirectMaxBytes, " bytes: ", kLengthOrCallWhy);
    RINGDP_CHECK(user || status.MPI_TAG == r.tag, "rank ", rank_, " is in ", describe_tag(r.tag),
                 " but rank ", sender(r, status), " sent it a message of ", describe_tag(status.MPI_TAG),
                 ": the ranks called different collectives");
    int received = 0;
    MPI_Get_count(&status, MPI_BYTE, &received);
    RINGDP_CHECK(static_cast<size_t>(received) == r.bytes, "rank ", rank_, " expected ", r.bytes,
                 " bytes of ", describe_tag(r.tag), " from rank ", sender(r, status), " and got ", received,
                 ": ", length_why(r, true));
  }
}

void MpiTransport::check_not_cut(int rc, const Request& request) const {
  RINGDP_CHECK(!(request.receive && error_class(rc) == MPI_ERR_TRUNCATE), "rank ", rank_, " expected ",
               request.bytes, " bytes of ", describe_tag(request.tag), " from rank ",
               sender(request, statuses_[0]), " and got a longer message: ", length_why(request, false));
}

bool MpiTransport::test(Request& request) {
  if (request.two_part) {
    two_part_->advance();
    return finish_two_part(request);
  }
  if (to_mpi(request) == MPI_REQUEST_NULL) return true;  // completed by an earlier test
  return test_mpi(request);
}

bool MpiTransport::test_mpi(Request& request) {
  const Request posted = request;
  MPI_Request m = to_mpi(request);
  int done = 0;
  statuses_.resize(1);
  const int rc = MPI_Test(&m, &done, statuses_.data());
  // Written back before the checks: MPI frees a request it completes, with an error too, and a
  // later test must never touch the freed one.
  request = from_mpi(m, request);
  check_not_cut(rc, posted);
  RINGDP_MPI_CHECK(rc);
  if (!done) return false;
  Request checked = posted;
  check_envelopes(std::span<Request>(&checked, 1));
  request.peer = sender(posted, statuses_[0]);  // a receive from any rank learns its sender here
  return true;
}

bool MpiTransport::test_one(Request& request) {
  if (to_mpi(request) == MPI_REQUEST_NULL) return true;
  if (!test_mpi(request)) return false;
  request = from_mpi(MPI_REQUEST_NULL);
  return true;
}

void MpiTransport::check_peers_calls(std::span<const Request> requests) const {
  if (!slots_) return;
  for (const Request& r : requests)
    if (r.receive && r.tag < kUserTagBase) slots_->check_same_call(r.peer);
}

void MpiTransport::reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) {
  kernels::reduce_into_cpu(dst, src, count, dtype, op);
}

void MpiTransport::copy(void* dst, const void* src, size_t bytes) {
  if (bytes && dst != src) std::memmove(dst, src, bytes);
}

void MpiTransport::native_all_reduce(const void* input, void* output, int64_t count, DType dtype,
                                     ReduceOp op) {
  native::all_reduce(comm_, input, output, count, dtype, op);
}

void MpiTransport::native_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                                 int root) {
  native::reduce(comm_, input, output, count, dtype, op, root);
}

void MpiTransport::native_broadcast(void* buffer, int64_t count, DType dtype, int root) {
  native::broadcast(comm_, buffer, count, dtype, root);
}

void MpiTransport::native_all_gather(const void* input, void* output, int64_t chunk_count, DType dtype) {
  native::all_gather(comm_, input, output, chunk_count, dtype);
}

void MpiTransport::native_reduce_scatter(const void* input, void* output, int64_t chunk_count, DType dtype,
                                         ReduceOp op) {
  // In place (the output is this rank's chunk of the input), MPI would get overlapping send and
  // receive buffers, which it forbids (MPI_IN_PLACE means another layout): reduce from a copy.
  const size_t total = static_cast<size_t>(chunk_count) * size_ * dtype_size(dtype);
  const auto* in = static_cast<const char*>(input);
  const auto* out = static_cast<const char*>(output);
  if (total > 0 && out >= in && out < in + total) {
    in_place_copy_.assign(in, in + total);
    input = in_place_copy_.data();
  }
  native::reduce_scatter(comm_, input, output, chunk_count, dtype, op);
}
void MpiTransport::native_barrier() { native::barrier(comm_); }

void MpiTransport::native_exchange(const BlockExchange& exchange) { native::exchange(comm_, exchange); }

bool MpiTransport::reads_device_memory() const { return mpi_cuda_aware(); }

void MpiTransport::bootstrap_broadcast(void* data, size_t bytes) {
  RINGDP_MPI_CHECK(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0, comm_));
}

Request MpiTransport::post_two_part(int peer, void* data, size_t bytes, int tag, bool receive) {
  Request request{0, peer, tag, bytes, receive, true};
  request.handle = two_part_->post(peer, data, bytes, tag, wire_tag(tag), receive);
  return request;
}

bool MpiTransport::finish_two_part(Request& request) {
  if (!two_part_->finish(request.handle)) return false;
  request = from_mpi(MPI_REQUEST_NULL);
  return true;
}

// The general wait, for a set with a two-part message in it: one test per request per poll, and
// the envelopes that arrived turned into posted payload receives, in order.
void MpiTransport::wait_two_part(std::span<Request> requests) {
  bool late = false;  // as in wait_all
  IdleBackoff backoff(yield_when_idle_);
  for (uint32_t polls = 0;; ++polls) {
    two_part_->advance();
    bool all_done = true;
    for (Request& r : requests) all_done = (r.two_part ? finish_two_part(r) : test_one(r)) && all_done;
    if (all_done) return;
    if (late) expire();
    const bool slept = backoff.pause();
    if (slept || (polls & 255u) == 255u) late = deadline_passed();
    if ((slept && (polls & 15u) == 15u) || (polls & 1023u) == 1023u) check_peers_calls(requests);
  }
}

}  // namespace ringdp::comm
#endif

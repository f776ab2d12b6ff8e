// Implements comm/mpi_transport.h (the contract is documented there). Tested by tests/mpi/ and
// tests/cli/bench.sh envelope.
#include "comm/mpi_transport.h"

#if RINGDP_HAVE_MPI
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>

#include "comm/envelope.h"
#include "comm/mpi_runtime.h"
#include "comm/native_mpi.h"
#include "comm/shared_slots.h"
#include "core/settings.h"

namespace ringdp::comm {

static_assert(sizeof(MPI_Request) <= sizeof(uintptr_t), "MPI_Request must fit in a Request handle");

namespace {
MPI_Request to_mpi(const Request& r) {
  MPI_Request m;
  std::memcpy(&m, &r.handle, sizeof m);
  return m;
}
Request from_mpi(MPI_Request m, Request r = {}) {
  std::memcpy(&r.handle, &m, sizeof m);
  return r;
}
}  // namespace

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

namespace {
// Tag 0 is never a collective's (encode_tag starts at 1): it marks an envelope.
constexpr int kEnvelopeTag = 0;
constexpr uint32_t kEnvelopeMagic = 0x52445045;  // "RDPE"
// What a length that differs can mean. The envelope (the MPI tag, or the envelope message ahead
// of a large payload) names the collective and carries the length, not the count each rank
// passed nor which chunk was sent, so a count that differs and a schedule that sends the wrong
// chunk of the right collective look alike here; DETAIL compares the counts before the call.
constexpr const char* kLengthWhy =
    "the ranks passed different counts, or the algorithm sent another chunk than this step expects "
    "(the envelope carries the collective and the length, not which chunk; RINGDP_DEBUG=DETAIL "
    "compares the counts before each collective and tells the two apart)";
// The same when the tag was not read either (a message cut short by MPI).
constexpr const char* kLengthOrCallWhy =
    "the ranks passed different counts or called different collectives, or the algorithm sent "
    "another chunk than this step expects (RINGDP_DEBUG=DETAIL compares the calls before each "
    "collective and tells these apart)";

// What a length that differs means for a user's message: nothing but the two tensors.
constexpr const char* kUserLengthWhy = "a send and its recv pass tensors of the same number of bytes";

// Why a receive's length can differ, its tag read (`tag_read`) or not.
const char* length_why(const Request& r, bool tag_read) {
  if (r.tag >= kUserTagBase) return kUserLengthWhy;
  return tag_read ? kLengthWhy : kLengthOrCallWhy;
}

// The rank a receive heard from: its peer, or for a receive from any rank (recv_any) the sender
// MPI names in the status, where a report said "rank -1".
int sender(const Request& r, const MPI_Status& status) {
  return r.peer == kAnySource ? status.MPI_SOURCE : r.peer;
}
}  // namespace

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
  for (uint32_t polls = 0;; ++polls) {
    const int rc = MPI_Testall(static_cast<int>(waiting_.size()), waiting_.data(), &done, statuses_.data());
    if (rc == MPI_ERR_IN_STATUS) {
      for (size_t i = 0; i < statuses_.size(); ++i) {
        if (statuses_[i].MPI_ERROR == MPI_ERR_TRUNCATE && requests[i].receive) {
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
    if (!receives_in_order_.empty()) advance_two_part();
    if (yield_when_idle_) std::this_thread::yield();
    // Reading the clock costs ~20 ns; every 256th poll keeps it off the fast path.
    if ((polls & 255u) == 255u) late = deadline_passed();
    if ((polls & 1023u) == 1023u) check_peers_calls(requests);
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
  void* base = nullptr;
  MPI_Win window = MPI_WIN_NULL;
  RINGDP_MPI_CHECK(MPI_Win_allocate_shared(static_cast<MPI_Aint>(SharedSlots::region_bytes(slot_bytes)), 1,
                                           MPI_INFO_NULL, node, &base, &window));
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
  RINGDP_CHECK(!(rc == MPI_ERR_TRUNCATE && request.receive), "rank ", rank_, " expected ", request.bytes,
               " bytes of ", describe_tag(request.tag), " from rank ", sender(request, statuses_[0]),
               " and got a longer message: ", length_why(request, false));
}

bool MpiTransport::test(Request& request) {
  if (request.two_part) {
    advance_two_part();
    return finish_two_part(request);
  }
  MPI_Request m = to_mpi(request);
  if (m == MPI_REQUEST_NULL) return true;  // completed by an earlier test: nothing to check again
  int done = 0;
  statuses_.resize(1);
  const int rc = MPI_Test(&m, &done, statuses_.data());
  check_not_cut(rc, request);
  RINGDP_MPI_CHECK(rc);
  if (done) check_envelopes(std::span<Request>(&request, 1));
  if (done) request.peer = sender(request, statuses_[0]);
  request = from_mpi(m, request);
  return done != 0;
}

Request MpiTransport::post_two_part(int peer, void* data, size_t bytes, int tag, bool receive) {
  if (free_records_.empty()) {
    two_part_records_.push_back(std::make_unique<TwoPart>());
    free_records_.push_back(two_part_records_.back().get());
  }
  TwoPart* part = free_records_.back();
  free_records_.pop_back();
  *part = TwoPart{.data = data, .bytes = bytes, .peer = peer, .tag = tag};
  if (receive) {
    RINGDP_MPI_CHECK(MPI_Irecv(&part->envelope, sizeof(Envelope), MPI_BYTE, peer, MPI_ANY_TAG, comm_,
                               &part->envelope_request));
    receives_in_order_.push_back(part);
  } else {
    part->envelope = Envelope{.bytes = bytes, .tag = tag, .magic = kEnvelopeMagic};
    RINGDP_MPI_CHECK(MPI_Isend(&part->envelope, sizeof(Envelope), MPI_BYTE, peer, kEnvelopeTag, comm_,
                               &part->envelope_request));
    RINGDP_MPI_CHECK(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, wire_tag(tag), payload_comm_,
                               &part->payload_request));
    part->payload_posted = true;
  }
  Request request{0, peer, tag, bytes, receive, true};
  request.handle = reinterpret_cast<uintptr_t>(part);
  return request;
}

void MpiTransport::check_envelope(const TwoPart& part, const MPI_Status& status) const {
  int received = 0;
  MPI_Get_count(&status, MPI_BYTE, &received);
  RINGDP_CHECK(status.MPI_TAG == kEnvelopeTag, "rank ", rank_, " expected ", part.bytes, " bytes of ",
               describe_tag(part.tag), " from rank ", part.peer, " and got ", received, " bytes of ",
               describe_tag(status.MPI_TAG), ": ", kLengthOrCallWhy);
  RINGDP_CHECK(received == static_cast<int>(sizeof(Envelope)) && part.envelope.magic == kEnvelopeMagic,
               "rank ", rank_, " got a malformed envelope from rank ", part.peer);
  RINGDP_CHECK(part.envelope.tag == part.tag, "rank ", rank_, " is in ", describe_tag(part.tag), " but rank ",
               part.peer, " sent it a message of ", describe_tag(part.envelope.tag),
               ": the ranks called different collectives");
  RINGDP_CHECK(part.envelope.bytes == part.bytes, "rank ", rank_, " expected ", part.bytes, " bytes of ",
               describe_tag(part.tag), " from rank ", part.peer, " and rank ", part.peer, " is sending ",
               part.envelope.bytes, " (stopped before any of it moved): ", kLengthWhy);
}

void MpiTransport::advance_two_part() {
  while (!receives_in_order_.empty()) {
    TwoPart* part = receives_in_order_.front();
    int arrived = 0;
    MPI_Status status;
    const int rc = MPI_Test(&part->envelope_request, &arrived, &status);
    // A message of another collective, longer than the envelope, is cut (it is sent eagerly).
    RINGDP_CHECK(rc != MPI_ERR_TRUNCATE, "rank ", rank_, " expected ", part->bytes, " bytes of ",
                 describe_tag(part->tag), " from rank ", part->peer,
                 " and got a shorter message: ", kLengthOrCallWhy);
    RINGDP_MPI_CHECK(rc);
    if (!arrived) return;
    check_envelope(*part, status);
    RINGDP_MPI_CHECK(MPI_Irecv(part->data, static_cast<int>(part->bytes), MPI_BYTE, part->peer,
                               wire_tag(part->tag), payload_comm_, &part->payload_request));
    part->payload_posted = true;
    receives_in_order_.pop_front();
  }
}

bool MpiTransport::finish_two_part(Request& request) {
  auto* part = reinterpret_cast<TwoPart*>(request.handle);
  if (!part->payload_posted) return false;
  MPI_Request both[2] = {part->envelope_request, part->payload_request};
  int done = 0;
  RINGDP_MPI_CHECK(MPI_Testall(2, both, &done, MPI_STATUSES_IGNORE));
  part->envelope_request = both[0];
  part->payload_request = both[1];
  if (!done) return false;
  free_records_.push_back(part);
  request = from_mpi(MPI_REQUEST_NULL);
  return true;
}

bool MpiTransport::test_one(Request& request) {
  MPI_Request m = to_mpi(request);
  if (m == MPI_REQUEST_NULL) return true;
  int done = 0;
  statuses_.resize(1);
  const int rc = MPI_Test(&m, &done, statuses_.data());
  check_not_cut(rc, request);
  RINGDP_MPI_CHECK(rc);
  if (!done) return false;
  check_envelopes(std::span<Request>(&request, 1));
  request = from_mpi(MPI_REQUEST_NULL);
  return true;
}

// The general wait, for a set with a two-part message in it: one test per request per poll, and
// the envelopes that arrived turned into posted payload receives, in order.
void MpiTransport::wait_two_part(std::span<Request> requests) {
  bool late = false;  // as in wait_all
  for (uint32_t polls = 0;; ++polls) {
    advance_two_part();
    bool all_done = true;
    for (Request& r : requests) all_done = (r.two_part ? finish_two_part(r) : test_one(r)) && all_done;
    if (all_done) return;
    if (late) expire();
    if (yield_when_idle_) std::this_thread::yield();
    if ((polls & 255u) == 255u) late = deadline_passed();
    if ((polls & 1023u) == 1023u) check_peers_calls(requests);
  }
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

}  // namespace ringdp::comm
#endif

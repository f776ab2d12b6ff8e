// Implements the two-part messages of comm/transport/mpi/mpi_transport.h (the protocol is described there): a
// collective's message over kDirectMaxBytes goes as an envelope, then its payload once the
// receiver has checked the envelope. Tested by tests/cli/bench.sh envelope and tests/mpi/mismatch.sh.
#include "comm/transport/mpi/mpi_transport.h"

#if RINGDP_HAVE_MPI
#include <climits>
#include <memory>
#include <span>
#include <thread>

#include "comm/transport/envelope.h"
#include "comm/transport/idle_backoff.h"
#include "comm/transport/mpi/mpi_wire.h"

namespace ringdp::comm {

using namespace mpi_wire;

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
    RINGDP_CHECK(error_class(rc) != MPI_ERR_TRUNCATE, "rank ", rank_, " expected ", part->bytes, " bytes of ",
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

// The general wait, for a set with a two-part message in it: one test per request per poll, and
// the envelopes that arrived turned into posted payload receives, in order.
void MpiTransport::wait_two_part(std::span<Request> requests) {
  bool late = false;  // as in wait_all
  IdleBackoff backoff(yield_when_idle_);
  for (uint32_t polls = 0;; ++polls) {
    advance_two_part();
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

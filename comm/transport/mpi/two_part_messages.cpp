// Implements comm/transport/mpi/two_part_messages.h (the protocol is described in
// comm/transport/mpi/mpi_transport.h). Tested by tests/cli/bench.sh envelope and tests/mpi/mismatch.sh.
#include "comm/transport/mpi/two_part_messages.h"

#if RINGDP_HAVE_MPI
#include <climits>

#include "comm/transport/envelope.h"
#include "comm/transport/mpi/mpi_transport.h"  // RINGDP_MPI_CHECK
#include "comm/transport/mpi/mpi_wire.h"

namespace ringdp::comm {

using namespace mpi_wire;

uintptr_t TwoPartMessages::post(int peer, void* data, size_t bytes, int tag, int wire_tag, bool receive) {
  if (free_.empty()) {
    records_.push_back(std::make_unique<Record>());
    free_.push_back(records_.back().get());
  }
  Record* part = free_.back();
  free_.pop_back();
  *part = Record{.data = data, .bytes = bytes, .peer = peer, .tag = tag, .wire_tag = wire_tag};
  if (receive) {
    RINGDP_MPI_CHECK(MPI_Irecv(&part->envelope, sizeof(Envelope), MPI_BYTE, peer, MPI_ANY_TAG, comm_,
                               &part->envelope_request));
    receives_in_order_.push_back(part);
  } else {
    part->envelope = Envelope{.bytes = bytes, .tag = tag, .magic = kEnvelopeMagic};
    RINGDP_MPI_CHECK(MPI_Isend(&part->envelope, sizeof(Envelope), MPI_BYTE, peer, kEnvelopeTag, comm_,
                               &part->envelope_request));
    RINGDP_MPI_CHECK(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, wire_tag, payload_comm_,
                               &part->payload_request));
    part->payload_posted = true;
  }
  return reinterpret_cast<uintptr_t>(part);
}

void TwoPartMessages::check_envelope(const Record& part, const MPI_Status& status) const {
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

void TwoPartMessages::advance() {
  while (!receives_in_order_.empty()) {
    Record* part = receives_in_order_.front();
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
                               part->wire_tag, payload_comm_, &part->payload_request));
    part->payload_posted = true;
    receives_in_order_.pop_front();
  }
}

bool TwoPartMessages::finish(uintptr_t handle) {
  auto* part = reinterpret_cast<Record*>(handle);
  if (!part->payload_posted) return false;
  MPI_Request both[2] = {part->envelope_request, part->payload_request};
  int done = 0;
  RINGDP_MPI_CHECK(MPI_Testall(2, both, &done, MPI_STATUSES_IGNORE));
  part->envelope_request = both[0];
  part->payload_request = both[1];
  if (!done) return false;
  free_.push_back(part);
  return true;
}

}  // namespace ringdp::comm
#endif

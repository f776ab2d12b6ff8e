// The two-part messages of the MPI transport (the protocol: comm/transport/mpi/mpi_transport.h):
// a collective's message longer than kDirectMaxBytes travels as an envelope on the collectives'
// communicator, then its payload on a communicator of its own, whose receive is posted only once
// the envelope has been checked. This object holds the records of the messages in flight and the
// order their receives were posted in; the transport holds it, posts through it, and asks it to
// move the receives on in each poll of a wait. Tested by tests/cli/bench.sh envelope and
// tests/mpi/mismatch.sh.
#pragma once

#include "config.h"

#if RINGDP_HAVE_MPI
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace ringdp::comm {

class TwoPartMessages {
 public:
  /// `comm` carries the envelopes (the collectives' communicator), `payload_comm` the payloads;
  /// `rank` is this rank's in both, for the reports.
  TwoPartMessages(MPI_Comm comm, MPI_Comm payload_comm, int rank)
      : comm_(comm), payload_comm_(payload_comm), rank_(rank) {}

  /// Posts a message's envelope (and a send's payload at once); the handle names it until
  /// finish() says it is done. `wire_tag` is the payload's tag as MPI sees it.
  uintptr_t post(int peer, void* data, size_t bytes, int tag, int wire_tag, bool receive);
  /// Posts the payload receive of every receive whose envelope has arrived, in the order their
  /// envelopes were posted (payloads of one collective share a tag, so a later receive posted first
  /// would take an earlier payload); checks each envelope before posting.
  void advance();
  /// True once both parts of `handle`'s message are done; its record is released then.
  bool finish(uintptr_t handle);
  /// Receives whose envelope has not arrived.
  bool receiving() const { return !receives_in_order_.empty(); }

 private:
  struct Envelope {
    uint64_t bytes = 0;
    int32_t tag = 0;
    uint32_t magic = 0;
  };
  struct Record {
    Envelope envelope{};
    MPI_Request envelope_request = MPI_REQUEST_NULL;
    MPI_Request payload_request = MPI_REQUEST_NULL;
    void* data = nullptr;
    size_t bytes = 0;
    int peer = -1;
    int tag = 0;
    int wire_tag = 0;
    bool payload_posted = false;
  };
  void check_envelope(const Record& record, const MPI_Status& status) const;

  MPI_Comm comm_;
  MPI_Comm payload_comm_;
  int rank_;
  std::deque<Record*> receives_in_order_;
  std::vector<std::unique_ptr<Record>> records_;  // reused: no allocation per message once warm
  std::vector<Record*> free_;
};

}  // namespace ringdp::comm
#endif

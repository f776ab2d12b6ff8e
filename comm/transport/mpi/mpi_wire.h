// What MpiTransport's messages carry on the wire and what a message that does not fit its
// receive means: shared by the transport (comm/transport/mpi/mpi_transport.cpp) and its two-part protocol
// (comm/transport/mpi/two_part_messages.cpp). Internal to those two files.
#pragma once

#include "config.h"

#if RINGDP_HAVE_MPI
#include <mpi.h>

#include <cstdint>
#include <cstring>

#include "comm/transport/envelope.h"
#include "comm/transport/transport.h"

namespace ringdp::comm::mpi_wire {

static_assert(sizeof(MPI_Request) <= sizeof(uintptr_t), "MPI_Request must fit in a Request handle");

inline MPI_Request to_mpi(const Request& r) {
  MPI_Request m;
  std::memcpy(&m, &r.handle, sizeof m);
  return m;
}
inline Request from_mpi(MPI_Request m, Request r = {}) {
  std::memcpy(&r.handle, &m, sizeof m);
  return r;
}

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
inline const char* length_why(const Request& r, bool tag_read) {
  if (r.tag >= kUserTagBase) return kUserLengthWhy;
  return tag_read ? kLengthWhy : kLengthOrCallWhy;
}

// The class of an MPI error code: MPICH returns codes that wrap the class with where it arose
// (an MPI_Test's truncation is not == MPI_ERR_TRUNCATE there), Open MPI the class itself.
inline int error_class(int rc) {
  if (rc == MPI_SUCCESS) return MPI_SUCCESS;
  int cls = MPI_ERR_OTHER;
  MPI_Error_class(rc, &cls);
  return cls;
}

// The rank a receive heard from: its peer, or for a receive from any rank (recv_any) the sender
// MPI names in the status, where a report said "rank -1".
inline int sender(const Request& r, const MPI_Status& status) {
  return r.peer == kAnySource ? status.MPI_SOURCE : r.peer;
}

}  // namespace ringdp::comm::mpi_wire
#endif

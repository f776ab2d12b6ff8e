// Implements comm/mpi_departures.h (the contract is documented there and in comm/departures.h).
// Tested by tests/mpi/rank_leaves.sh and tests/torch/test_leave.sh.
#include "comm/mpi_departures.h"

#if RINGDP_HAVE_MPI
#include <algorithm>
#include <cstring>

#include "comm/mpi_transport.h"

namespace ringdp::comm {

MpiDepartures::MpiDepartures(MPI_Comm user_comm, int tag) : control_(user_comm), tag_(tag) {
  RINGDP_MPI_CHECK(MPI_Comm_rank(control_, &rank_));
  RINGDP_MPI_CHECK(MPI_Comm_size(control_, &size_));
  arrivals_.resize(static_cast<size_t>(size_));
  if (size_ > 1)
    RINGDP_MPI_CHECK(
        MPI_Irecv(&incoming_, sizeof(Notice), MPI_BYTE, MPI_ANY_SOURCE, tag_, control_, &receive_));
}

MpiDepartures::~MpiDepartures() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) stop_listening();  // only a communicator whose creation failed gets here listening
}

void MpiDepartures::stop_listening() {
  if (receive_ == MPI_REQUEST_NULL) return;
  // Cancelling a receive is reliable in MPI (a send's is not): it either matched or is cancelled.
  MPI_Cancel(&receive_);
  MPI_Wait(&receive_, MPI_STATUS_IGNORE);
}

void MpiDepartures::take_arrivals() {
  while (receive_ != MPI_REQUEST_NULL) {
    int done = 0;
    MPI_Status status;
    RINGDP_MPI_CHECK(MPI_Test(&receive_, &done, &status));
    if (!done) return;
    Arrival& arrival = arrivals_[static_cast<size_t>(status.MPI_SOURCE)];
    if (!arrival.arrived) ++arrived_count_;
    arrival = Arrival{.arrived = true,
                      .frees_shared = incoming_.frees_shared != 0,
                      .why = std::string(incoming_.why, strnlen(incoming_.why, sizeof(incoming_.why))),
                      .finished = incoming_.finished,
                      .order = arrived_count_};
    if (arrived_count_ == size_ - 1) return;  // every peer has left: nothing more will come
    RINGDP_MPI_CHECK(
        MPI_Irecv(&incoming_, sizeof(Notice), MPI_BYTE, MPI_ANY_SOURCE, tag_, control_, &receive_));
  }
}

void MpiDepartures::check() {
  if (size_ == 1 || !position_) return;
  // Sends and receives involve some ranks only, and are numbered apart from the collectives.
  if (position_->kind == CollectiveKind::send || position_->kind == CollectiveKind::recv) return;
  take_arrivals();
  if (arrived_count_ == 0) return;
  // The first to leave is named: the others may have left because of it (their own collective
  // failed when it left).
  int first = -1;
  for (int peer = 0; peer < size_; ++peer) {
    const Arrival& arrival = arrivals_[static_cast<size_t>(peer)];
    if (arrival.arrived && arrival.finished <= position_->sequence &&
        (first < 0 || arrival.order < arrivals_[static_cast<size_t>(first)].order))
      first = peer;
  }
  if (first >= 0) throw_left(first);
}

void MpiDepartures::throw_left(int peer) const {
  const Arrival& arrival = arrivals_[static_cast<size_t>(peer)];
  throw PeerLeft(detail::concat("rank ", peer, " left (", arrival.why, ") after finishing ", arrival.finished,
                                " collective", arrival.finished == 1 ? "" : "s",
                                " on this communicator, while rank ", rank_, " waited for it"));
}

void MpiDepartures::announce(const std::string& why, uint64_t finished, bool frees_shared) {
  if (announced_ || size_ == 1) return;
  announced_ = true;
  // Sent and let go (MPI_Request_free): the notices to peers that have stopped listening are
  // never received. The buffer is never freed for that reason: it may be read until the send
  // completes, which nothing here can learn (a few hundred bytes per communicator).
  auto* notice = new Notice{.finished = finished, .frees_shared = frees_shared ? 1 : 0, .why = {}};
  std::strncpy(notice->why, why.c_str(), sizeof(notice->why) - 1);
  if (why.size() >= sizeof(notice->why)) std::memcpy(notice->why + sizeof(notice->why) - 4, "...", 3);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    RINGDP_MPI_CHECK(MPI_Isend(notice, sizeof(Notice), MPI_BYTE, peer, tag_, control_, &request));
    RINGDP_MPI_CHECK(MPI_Request_free(&request));
  }
}

bool MpiDepartures::everyone_left() {
  take_arrivals();
  return arrived_count_ == size_ - 1;
}

bool MpiDepartures::everyone_frees_shared() const {
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && !arrivals_[static_cast<size_t>(peer)].frees_shared) return false;
  return true;
}

std::string MpiDepartures::missing() const {
  std::string ranks;
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && !arrivals_[static_cast<size_t>(peer)].arrived)
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(peer);
  return ranks;
}

}  // namespace ringdp::comm
#endif

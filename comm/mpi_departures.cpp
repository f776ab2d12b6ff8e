// Implements comm/mpi_departures.h (the contract is documented there). Tested by
// tests/mpi/rank_leaves.sh and tests/torch/test_leave.sh.
#include "comm/mpi_departures.h"

#if RINGDP_HAVE_MPI
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>

#include "comm/mpi_runtime.h"
#include "comm/mpi_transport.h"

namespace ringdp::comm {

namespace {
constexpr int kNoticeTag = 1;
}  // namespace

MpiDepartures::MpiDepartures(MPI_Comm comm, bool whole_job) : whole_job_(whole_job) {
  RINGDP_MPI_CHECK(MPI_Comm_dup(comm, &control_));
  RINGDP_MPI_CHECK(MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN));
  RINGDP_MPI_CHECK(MPI_Comm_rank(control_, &rank_));
  RINGDP_MPI_CHECK(MPI_Comm_size(control_, &size_));
  arrivals_.resize(static_cast<size_t>(size_));
  if (size_ > 1)
    RINGDP_MPI_CHECK(
        MPI_Irecv(&incoming_, sizeof(Notice), MPI_BYTE, MPI_ANY_SOURCE, kNoticeTag, control_, &receive_));
}

MpiDepartures::~MpiDepartures() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) cancel_receive();
  // control_ is not freed: a group's peers may still send their notices to it, and Open MPI
  // gives a freed communicator's context id to the next one made, whose receive would take them
  // (comm/mpi_transport.cpp says the same of send/recv's communicator).
}

void MpiDepartures::cancel_receive() {
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
                      .at = std::chrono::steady_clock::now(),
                      .why = std::string(incoming_.why, strnlen(incoming_.why, sizeof(incoming_.why))),
                      .issued = incoming_.issued};
    if (arrived_count_ == size_ - 1) return;  // every peer has left: nothing more will come
    RINGDP_MPI_CHECK(
        MPI_Irecv(&incoming_, sizeof(Notice), MPI_BYTE, MPI_ANY_SOURCE, kNoticeTag, control_, &receive_));
  }
}

void MpiDepartures::check() {
  if (size_ == 1) return;
  take_arrivals();
  if (arrived_count_ == 0) return;
  const auto now = std::chrono::steady_clock::now();
  for (int peer = 0; peer < size_; ++peer) {
    const Arrival& arrival = arrivals_[static_cast<size_t>(peer)];
    if (arrival.arrived && now - arrival.at > kGrace) throw_left(peer);
  }
}

void MpiDepartures::throw_left(int peer) const {
  const Arrival& arrival = arrivals_[static_cast<size_t>(peer)];
  throw PeerLeft(detail::concat("rank ", peer, " left (", arrival.why, ") after issuing ", arrival.issued,
                                " collective", arrival.issued == 1 ? "" : "s",
                                " on this communicator, while rank ", rank_, " waited for it"));
}

bool MpiDepartures::leave(const std::string& why, uint64_t issued, bool unwinding,
                          std::chrono::milliseconds limit) {
  if (left_ || size_ == 1) return !left_ && !unwinding;
  left_ = true;
  // Sent and let go (MPI_Request_free): the notices of a group whose peers have already left are
  // never received. The buffer is never freed for that reason: it may be read until the send
  // completes, which nothing here can learn (a few hundred bytes per communicator).
  auto* notice = new Notice{.issued = issued, .frees_shared = unwinding ? 0 : 1, .why = {}};
  std::strncpy(notice->why, why.c_str(), sizeof(notice->why) - 1);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    RINGDP_MPI_CHECK(MPI_Isend(notice, sizeof(Notice), MPI_BYTE, peer, kNoticeTag, control_, &request));
    RINGDP_MPI_CHECK(MPI_Request_free(&request));
  }
  if (!whole_job_ || unwinding) return false;
  await_everyone(limit);
  return std::all_of(arrivals_.begin(), arrivals_.end(), [&](const Arrival& a) {
    return &a == &arrivals_[static_cast<size_t>(rank_)] || a.frees_shared;
  });
}

void MpiDepartures::await_everyone(std::chrono::milliseconds limit) {
  // Waiting here may last (a peer still computing, or still inside a collective that has yet to
  // see this rank's notice): sleep between looks, growing to 10 ms, rather than take a core.
  const auto deadline = std::chrono::steady_clock::now() + limit;
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    take_arrivals();
    if (arrived_count_ == size_ - 1) return;
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
  std::string missing;
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && !arrivals_[static_cast<size_t>(peer)].arrived)
      missing += (missing.empty() ? "" : ", ") + std::to_string(peer);
  std::fprintf(stderr,
               "ringdp: rank %d: left the job, but rank(s) %s did not leave within %.3g s (the collective "
               "timeout); ending the job\n",
               rank_, missing.c_str(), static_cast<double>(limit.count()) / 1000.0);
  abort_job(1);
}

}  // namespace ringdp::comm
#endif

// Implements comm/world/mpi_departures.h (the contract is documented there and in
// comm/world/notice_departures.h). Tested by tests/mpi/rank_leaves.sh and tests/torch/test_leave.sh.
#include "comm/world/mpi_departures.h"

#if RINGDP_HAVE_MPI
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "comm/bootstrap/exit_hooks.h"
#include "comm/bootstrap/mpi_runtime.h"
#include "comm/transport/mpi/mpi_transport.h"

namespace ringdp::comm {

namespace {
// The notices of every communicator that has left, completed at exit before MPI_Finalize. Freeing
// a send (MPI_Request_free) instead let MPI_Finalize run with one still being written: over TCP
// the connection to a peer this rank had never talked to was still being made when that peer,
// past MPI_Finalize's fence, closed it, and the rank died of SIGPIPE (the net suite, 1 run in CI).
// An eager send completes once written, received or not; every peer is inside MPI until each rank
// has reached MPI_Finalize, so the wait is short. A bound keeps a peer that died from holding the
// exit: then MPI_Finalize runs as before.
struct Outbox {
  std::mutex mutex;
  std::vector<MPI_Request> sends;
  std::vector<std::unique_ptr<NoticeDepartures::Notice>> notices;
  bool registered = false;
};

Outbox& outbox() {
  static auto* box = new Outbox;  // leaked: read at exit, after static destructors may have run
  return *box;
}

void complete_sent_notices() {
  Outbox& box = outbox();
  std::lock_guard lock(box.mutex);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int done = 0;
  while (!box.sends.empty() && std::chrono::steady_clock::now() < until) {
    if (MPI_Testall(static_cast<int>(box.sends.size()), box.sends.data(), &done, MPI_STATUSES_IGNORE) !=
        MPI_SUCCESS)
      return;  // a peer's connection failed: the launcher is ending the job
    if (done) {
      box.sends.clear();
      box.notices.clear();
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void post_for_exit(std::vector<MPI_Request>& sends, std::unique_ptr<NoticeDepartures::Notice> notice) {
  Outbox& box = outbox();
  std::lock_guard lock(box.mutex);
  box.sends.insert(box.sends.end(), sends.begin(), sends.end());
  sends.clear();
  if (notice) box.notices.push_back(std::move(notice));
  if (!box.registered) before_finalize(complete_sent_notices);
  box.registered = true;
}

int rank_in(MPI_Comm comm) {
  int rank = 0;
  RINGDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  return rank;
}

int size_of(MPI_Comm comm) {
  int size = 1;
  RINGDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  return size;
}
}  // namespace

MpiDepartures::MpiDepartures(MPI_Comm user_comm, int tag)
    : NoticeDepartures(rank_in(user_comm), size_of(user_comm)), control_(user_comm), tag_(tag) {
  if (size_ > 1)
    RINGDP_MPI_CHECK(
        MPI_Irecv(&incoming_, sizeof(Notice), MPI_BYTE, MPI_ANY_SOURCE, tag_, control_, &receive_));
}

MpiDepartures::~MpiDepartures() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) stop_listening();  // only a communicator whose creation failed gets here listening
}

bool MpiDepartures::usable() const { return mpi_is_initialized(); }

void MpiDepartures::stop_listening() {
  if (!sends_.empty()) post_for_exit(sends_, std::move(notice_));
  if (receive_ == MPI_REQUEST_NULL) return;
  // Cancelling a receive is reliable in MPI (a send's is not): it either matched or is cancelled.
  MPI_Cancel(&receive_);
  MPI_Wait(&receive_, MPI_STATUS_IGNORE);
}

bool MpiDepartures::receive(Notice& notice, int& from) {
  if (receive_ == MPI_REQUEST_NULL) return false;
  int done = 0;
  MPI_Status status;
  RINGDP_MPI_CHECK(MPI_Test(&receive_, &done, &status));
  if (!done) return false;
  notice = incoming_;
  from = status.MPI_SOURCE;
  RINGDP_MPI_CHECK(
      MPI_Irecv(&incoming_, sizeof(Notice), MPI_BYTE, MPI_ANY_SOURCE, tag_, control_, &receive_));
  return true;
}

void MpiDepartures::send(int peer, const Notice& notice) {
  // A peer that has stopped listening never receives its notice: the sends complete because they
  // are eager, and are waited for at exit (stop_listening), not here.
  MPI_Request& request = sends_.emplace_back(MPI_REQUEST_NULL);
  RINGDP_MPI_CHECK(MPI_Isend(&notice, sizeof(Notice), MPI_BYTE, peer, tag_, control_, &request));
}

}  // namespace ringdp::comm
#endif

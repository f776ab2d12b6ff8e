// Implements comm/world/mpi_departures.h (the contract is documented there and in comm/world/departures.h).
// Tested by tests/mpi/rank_leaves.sh and tests/torch/test_leave.sh.
#include "comm/world/mpi_departures.h"

#if RINGDP_HAVE_MPI
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "comm/bootstrap/mpi_runtime.h"
#include "comm/transport/mpi/mpi_transport.h"
#include "core/settings.h"

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
  std::vector<std::unique_ptr<MpiDepartures::Notice>> notices;
  bool registered = false;
};
// RINGDP_TEST_NOTICE_DELAY=FROM:TO:MS: rank FROM sends its notice to rank TO MS ms late, so a
// test can make another rank's notice come first (tests/mpi/rank_leaves.sh). Read when the
// communicator is made: a notice may be sent from a destructor, where an error cannot go.
MpiDepartures::NoticeDelay notice_delay() {
  const std::optional<std::string> text = settings::text(settings::Id::test_notice_delay);
  MpiDepartures::NoticeDelay delay;
  if (!text) return delay;
  long long ms = -1;
  char rest = 0;
  RINGDP_CHECK(std::sscanf(text->c_str(), "%d:%d:%lld%c", &delay.from, &delay.to, &ms, &rest) == 3 && ms >= 0,
               "RINGDP_TEST_NOTICE_DELAY is '", *text, "'; expected FROM:TO:MS, e.g. 1:2:1500");
  delay.wait = std::chrono::milliseconds(ms);
  return delay;
}

static_assert(sizeof(MpiDepartures::Notice) <= 1024,
              "a notice must travel eagerly: no peer posts its receive");

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

void post_for_exit(std::vector<MPI_Request>& sends, std::unique_ptr<MpiDepartures::Notice> notice) {
  Outbox& box = outbox();
  std::lock_guard lock(box.mutex);
  box.sends.insert(box.sends.end(), sends.begin(), sends.end());
  sends.clear();
  if (notice) box.notices.push_back(std::move(notice));
  if (!box.registered) before_finalize(complete_sent_notices);
  box.registered = true;
}
}  // namespace

MpiDepartures::MpiDepartures(MPI_Comm user_comm, int tag)
    : control_(user_comm), tag_(tag), delay_(notice_delay()) {
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
  if (!sends_.empty()) post_for_exit(sends_, std::move(notice_));
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
                      .order = arrived_count_,
                      .self = incoming_.self,
                      .cause = incoming_.cause};
    arrival.self.rank = status.MPI_SOURCE;
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
    if (arrival.arrived && arrival.self.finished <= position_->sequence &&
        (first < 0 || arrival.order < arrivals_[static_cast<size_t>(first)].order))
      first = peer;
  }
  if (first >= 0) throw_left(first);
}

void MpiDepartures::throw_left(int peer) {
  const Arrival& arrival = arrivals_[static_cast<size_t>(peer)];
  // A peer that left because another did passes on whom it blamed: that rank is named, as it
  // would be had its own notice come first (it may come later, over another path).
  const Report& named = arrival.cause.rank >= 0 && arrival.cause.rank != rank_ ? arrival.cause : arrival.self;
  blamed_ = named;
  const std::string why(named.why, strnlen(named.why, sizeof(named.why)));
  if (named.failed)
    throw PeerLeft(detail::concat("rank ", named.rank, " failed in this collective (", why,
                                  ") and will not finish it, while rank ", rank_, " waited for it"));
  throw PeerLeft(detail::concat("rank ", named.rank, " left (", why, ") after finishing ", named.finished,
                                " collective", named.finished == 1 ? "" : "s",
                                " on this communicator, while rank ", rank_, " waited for it"));
}

void MpiDepartures::announce(const std::string& why, uint64_t finished, bool frees_shared) {
  send_notice(why, finished, frees_shared, false);
}

void MpiDepartures::announce_failure(const std::string& why, uint64_t finished) {
  send_notice(why, finished, false, true);
}

void MpiDepartures::send_notice(const std::string& why, uint64_t finished, bool frees_shared, bool failed) {
  if (announced_ || size_ == 1) return;
  announced_ = true;
  frees_shared_ = frees_shared;
  // A peer that has stopped listening never receives its notice: the sends complete because they
  // are eager, and are waited for at exit (stop_listening), not here.
  notice_ = std::make_unique<Notice>(
      Notice{.self = {.finished = finished, .failed = failed ? 1 : 0, .rank = rank_, .why = {}},
             .frees_shared = frees_shared ? 1 : 0,
             .padding = 0,
             .cause = blamed_});
  char* text = notice_->self.why;
  std::strncpy(text, why.c_str(), sizeof(notice_->self.why) - 1);
  if (why.size() >= sizeof(notice_->self.why)) std::memcpy(text + sizeof(notice_->self.why) - 4, "...", 3);
  // A test's delayed peer gets its notice last, after the delay; the others on time.
  const int delayed = delay_.from == rank_ ? delay_.to : -1;
  const auto send = [&](int peer) {
    MPI_Request& request = sends_.emplace_back(MPI_REQUEST_NULL);
    RINGDP_MPI_CHECK(MPI_Isend(notice_.get(), sizeof(Notice), MPI_BYTE, peer, tag_, control_, &request));
  };
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && peer != delayed) send(peer);
  if (delayed >= 0 && delayed < size_ && delayed != rank_) {
    std::this_thread::sleep_for(delay_.wait);
    send(delayed);
  }
}

bool MpiDepartures::everyone_left() {
  take_arrivals();
  return arrived_count_ == size_ - 1;
}

bool MpiDepartures::everyone_frees_shared() const {
  if (!frees_shared_) return false;  // this rank said it would not: freeing is collective
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

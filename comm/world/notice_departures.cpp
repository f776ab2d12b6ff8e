// Implements comm/world/notice_departures.h (the contract is documented there and in
// comm/world/departures.h).
#include "comm/world/notice_departures.h"

#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include "core/settings.h"

namespace ringdp::comm {

namespace {
// RINGDP_TEST_NOTICE_DELAY=FROM:TO:MS: rank FROM sends its notice to rank TO MS ms late, so a
// test can make another rank's notice come first (tests/mpi/rank_leaves.sh). Read when the
// communicator is made: a notice may be sent from a destructor, where an error cannot go.
NoticeDepartures::NoticeDelay notice_delay() {
  const std::optional<std::string> text = settings::text(settings::Id::test_notice_delay);
  NoticeDepartures::NoticeDelay delay;
  if (!text) return delay;
  long long ms = -1;
  char rest = 0;
  RINGDP_CHECK(std::sscanf(text->c_str(), "%d:%d:%lld%c", &delay.from, &delay.to, &ms, &rest) == 3 && ms >= 0,
               "RINGDP_TEST_NOTICE_DELAY is '", *text, "'; expected FROM:TO:MS, e.g. 1:2:1500");
  delay.wait = std::chrono::milliseconds(ms);
  return delay;
}

static_assert(sizeof(NoticeDepartures::Notice) <= 1024,
              "a notice must travel eagerly: no peer posts its receive");
}  // namespace

NoticeDepartures::NoticeDepartures(int rank, int size)
    : rank_(rank), size_(size), delay_(notice_delay()), arrivals_(static_cast<size_t>(size)) {}

void NoticeDepartures::take_arrivals() {
  Notice incoming;
  int from = -1;
  while (arrived_count_ < size_ - 1 && receive(incoming, from)) {
    Arrival& arrival = arrivals_[static_cast<size_t>(from)];
    if (!arrival.arrived) ++arrived_count_;
    arrival = Arrival{.arrived = true,
                      .frees_shared = incoming.frees_shared != 0,
                      .order = arrived_count_,
                      .self = incoming.self,
                      .cause = incoming.cause};
    arrival.self.rank = from;
  }
}

bool NoticeDepartures::watching_collective() const {
  return size_ > 1 && position_ && position_->kind != CollectiveKind::send &&
         position_->kind != CollectiveKind::recv;
}

void NoticeDepartures::check() {
  if (!watching_collective()) return;
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

void NoticeDepartures::throw_left(int peer) {
  const Arrival& arrival = arrivals_[static_cast<size_t>(peer)];
  // A peer that left because another did passes on whom it blamed: that rank is named, as it
  // would be had its own notice come first (it may come later, over another path).
  const Report& named = arrival.cause.rank >= 0 && arrival.cause.rank != rank_ ? arrival.cause : arrival.self;
  blamed_ = named;
  const std::string why(named.why, strnlen(named.why, sizeof(named.why)));
  if (named.failed == 2)
    throw PeerLeft(detail::concat("rank ", named.rank, " ", why, ", while rank ", rank_, " waited for it"));
  if (named.failed)
    throw PeerLeft(detail::concat("rank ", named.rank, " failed in this collective (", why,
                                  ") and will not finish it, while rank ", rank_, " waited for it"));
  throw PeerLeft(detail::concat("rank ", named.rank, " left (", why, ") after finishing ", named.finished,
                                " collective", named.finished == 1 ? "" : "s",
                                " on this communicator, while rank ", rank_, " waited for it"));
}

void NoticeDepartures::throw_ended(int peer, const std::string& why) {
  blamed_ = Report{.finished = 0, .failed = 2, .rank = peer, .why = {}};
  std::strncpy(blamed_.why, why.c_str(), sizeof(blamed_.why) - 1);
  throw PeerLeft(detail::concat("rank ", peer, " ", why, ", while rank ", rank_, " waited for it"));
}

void NoticeDepartures::announce(const std::string& why, uint64_t finished, bool frees_shared) {
  send_notice(why, finished, frees_shared, false);
}

void NoticeDepartures::announce_failure(const std::string& why, uint64_t finished) {
  send_notice(why, finished, false, true);
}

void NoticeDepartures::send_notice(const std::string& why, uint64_t finished, bool frees_shared,
                                   bool failed) {
  if (announced_ || size_ == 1) return;
  announced_ = true;
  frees_shared_ = frees_shared;
  notice_ = std::make_unique<Notice>(
      Notice{.self = {.finished = finished, .failed = failed ? 1 : 0, .rank = rank_, .why = {}},
             .frees_shared = frees_shared ? 1 : 0,
             .padding = 0,
             .cause = blamed_});
  char* text = notice_->self.why;
  std::strncpy(text, why.c_str(), sizeof(notice_->self.why) - 1);
  if (why.size() >= sizeof(notice_->self.why)) std::memcpy(text + sizeof(notice_->self.why) - 4, "...", 3);
  // Who has left already: a transport that cannot reach them (UCX) skips them.
  take_arrivals();
  // A test's delayed peer gets its notice last, after the delay; the others on time.
  const int delayed = delay_.from == rank_ ? delay_.to : -1;
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && peer != delayed) send(peer, *notice_);
  if (delayed >= 0 && delayed < size_ && delayed != rank_) {
    std::this_thread::sleep_for(delay_.wait);
    send(delayed, *notice_);
  }
}

bool NoticeDepartures::everyone_left() {
  take_arrivals();
  return arrived_count_ == size_ - 1;
}

bool NoticeDepartures::everyone_frees_shared() const {
  if (!frees_shared_) return false;  // this rank said it would not: freeing is collective
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && !arrivals_[static_cast<size_t>(peer)].frees_shared) return false;
  return true;
}

std::string NoticeDepartures::missing() const {
  std::string ranks;
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && !arrivals_[static_cast<size_t>(peer)].arrived)
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(peer);
  return ranks;
}

}  // namespace ringdp::comm

// Implements comm/world/ucx_departures.h (the contract is documented there and in
// comm/world/notice_departures.h).
#include "comm/world/ucx_departures.h"

#if RINGDP_HAVE_UCX
#include <unistd.h>

#include <algorithm>
#include <thread>

namespace ringdp::comm {

UcxDepartures::UcxDepartures(UcxTransport& transport, std::vector<ProcessIdentity> processes)
    : NoticeDepartures(transport.rank(), transport.size()),
      transport_(transport),
      processes_(std::move(processes)),
      watched_(processes_.size(), false) {
  char name[64] = {};
  gethostname(name, sizeof name - 1);
  host_ = name;
  for (size_t r = 0; r < processes_.size(); ++r)
    watched_[r] = static_cast<int>(r) != rank_ && can_watch(processes_[r]);
  if (size_ > 1) {
    receive_ = transport_.receive_notice(&incoming_, sizeof incoming_);
    listening_ = true;
  }
}

UcxDepartures::~UcxDepartures() {
  if (listening_) stop_listening();
}

bool UcxDepartures::receive(Notice& notice, int& from) {
  if (!listening_) return false;
  transport_.progress();
  if (!transport_.notice_done(receive_, from)) return false;
  notice = incoming_;  // before the next receive is posted: UCX may fill it at once
  receive_ = transport_.receive_notice(&incoming_, sizeof incoming_);
  return from >= 0 && from < size_;  // a failed receive: reposted, nothing taken
}

void UcxDepartures::send(int peer, const Notice& notice) {
  // Not to a peer that has left (it listens no more: without MPI no rank waits for the others at
  // leaving) or whose process has ended: UCX's shared memory would write into a queue that is gone.
  // (announce took the arrivals just before.)
  if (arrived(peer) || !transport_.peer_failure(peer).empty() ||
      (watched_[static_cast<size_t>(peer)] && has_ended(processes_[static_cast<size_t>(peer)])))
    return;
  sends_.push_back(transport_.send_notice(peer, &notice, sizeof notice));
}

void UcxDepartures::check() {
  NoticeDepartures::check();
  if (!watching_collective()) return;
  // UCX's reports cost a look at a string each, so every time; /proc at most every 100 ms.
  const auto now = std::chrono::steady_clock::now();
  const bool processes = now >= next_look_;
  if (processes) next_look_ = now + std::chrono::milliseconds(100);
  check_ends(processes);
}

std::string UcxDepartures::end_of(int peer, bool processes) const {
  if (peer == rank_) return {};
  const ProcessIdentity& process = processes_[static_cast<size_t>(peer)];
  if (processes && watched_[static_cast<size_t>(peer)] && has_ended(process))
    return detail::concat(
        "(process ", process.pid, " on ", host_,
        ") ended without leaving the job (killed by a signal, or by the out-of-memory killer?)");
  const std::string& failure = transport_.peer_failure(peer);
  if (failure.empty()) return {};
  return detail::concat("(on another machine) lost its connection to rank ", rank_,
                        " without leaving the job (UCX: ", failure, "; was it killed?)");
}

void UcxDepartures::check_ends(bool processes) {
  for (int peer = 0; peer < size_; ++peer) {
    if (arrived(peer)) continue;
    const std::string why = end_of(peer, processes);
    if (why.empty()) continue;
    // Its notice, sent before it ended, may still be on its way into this worker (a busy queue,
    // TCP): looked for a while before the rank is blamed.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    while (!arrived(peer) && std::chrono::steady_clock::now() < until) {
      transport_.progress();
      take_arrivals();
    }
    if (arrived(peer)) {
      NoticeDepartures::check();
      continue;  // it left after finishing what this rank waits for: not to blame
    }
    throw_ended(peer, why);
  }
}

void UcxDepartures::stop_listening() {
  if (listening_) transport_.cancel_notice(receive_);
  listening_ = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  int ignored = -1;
  for (;;) {
    std::erase_if(sends_, [&](Request& r) { return transport_.notice_done(r, ignored); });
    if (sends_.empty() || std::chrono::steady_clock::now() > until) break;
    transport_.progress();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  for (Request& r : sends_) transport_.cancel_notice(r);
  sends_.clear();
}

}  // namespace ringdp::comm
#endif

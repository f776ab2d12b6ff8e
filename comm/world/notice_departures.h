// NoticeDepartures: comm/world/departures.h by notices, one small message from a rank that leaves
// (or fails in a collective) to every peer, kept apart from every other message by a tag no user
// may take. This class keeps what the notices say and decides whom a wait blames; how a notice
// travels is its subclasses': over MPI (comm/world/mpi_departures.h) or over UCX, for jobs that no
// MPI launcher started (comm/world/ucx_departures.h). Every call is made by the thread that holds
// its communicator's call queue's exec_mutex: check() from a collective's wait, the rest from
// Communicator::leave. Tested by tests/mpi/rank_leaves.sh and tests/torch/test_leave.sh.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/world/departures.h"

namespace ringdp::comm {

class NoticeDepartures : public Departures {
 public:
  struct NoticeDelay {
    int from = -1, to = -1;
    std::chrono::milliseconds wait{0};
  };
  /// What one rank says of itself, or of the rank it blames.
  struct Report {
    uint64_t finished = 0;
    int32_t failed = 0;  // 1: it failed in collective `finished` (announce_failure); 2: it ended unannounced
    int32_t rank = -1;  // in `cause`: whom it blames; -1 for none
    char why[240] = {};
  };
  struct Notice {
    Report self;
    int32_t frees_shared = 0;
    int32_t padding = 0;
    // The rank whose leaving or failure made this one leave, as this one heard it: a peer that
    // hears this notice before the cause's own (another path, a later send) names the cause.
    Report cause;
  };

  /// Throws PeerLeft when a rank that left had not finished the collective this rank waits in.
  void check() override;
  void announce(const std::string& why, uint64_t finished, bool frees_shared) override;
  void announce_failure(const std::string& why, uint64_t finished) override;
  bool everyone_left() override;
  bool everyone_frees_shared() const override;
  std::string missing() const override;

 protected:
  /// `rank` of `size`; reads RINGDP_TEST_NOTICE_DELAY (an Error when malformed).
  NoticeDepartures(int rank, int size);
  /// One notice that has arrived, into `notice`, and its sender into `from`; false when none
  /// has. Never blocks.
  virtual bool receive(Notice& notice, int& from) = 0;
  /// Starts sending `notice` (alive until the subclass lets it go) to `peer`. Never blocks.
  virtual void send(int peer, const Notice& notice) = 0;
  /// Whether this rank waits in a collective of more than one rank: send and receive involve some
  /// ranks only and are numbered apart from the collectives, so no departure is checked there.
  bool watching_collective() const;
  /// Whether `peer`'s notice has arrived.
  bool arrived(int peer) const { return arrivals_[static_cast<size_t>(peer)].arrived; }
  /// Throws about `peer`'s departure, or about the rank it blamed; remembers whom it named, for
  /// this rank's own notice.
  [[noreturn]] void throw_left(int peer);
  /// Throws about `peer`, which ended without a notice (`why`), and remembers it as throw_left.
  [[noreturn]] void throw_ended(int peer, const std::string& why);
  /// Takes every notice that has arrived; never blocks.
  void take_arrivals();
  /// What announce() sent (null before): its subclass keeps it alive until every send is done.
  std::unique_ptr<Notice> notice_;
  const int rank_, size_;

 private:
  struct Arrival {
    bool arrived = false;
    bool frees_shared = false;
    int order = 0;  // 1 for the first notice to arrive, 2 for the next...
    Report self, cause;
  };
  void send_notice(const std::string& why, uint64_t finished, bool frees_shared, bool failed);

  bool announced_ = false;
  Report blamed_;  // whom this rank named when a peer's departure failed its collective
  NoticeDelay delay_;  // a test's (RINGDP_TEST_NOTICE_DELAY)
  bool frees_shared_ = false;  // what this rank's own notice said
  int arrived_count_ = 0;
  std::vector<Arrival> arrivals_;  // by peer rank
};

}  // namespace ringdp::comm

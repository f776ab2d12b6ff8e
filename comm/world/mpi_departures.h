// MpiDepartures: comm/world/departures.h over MPI. Each rank keeps one receive posted from any rank on
// the communicator of send/recv, under the one tag no user may take (MPI_TAG_UB: user receives
// always name their tag, and collectives travel elsewhere); leaving sends every peer one small
// notice there. That communicator is never freed (comm/transport/mpi/mpi_transport.cpp says why), so a notice
// that no peer takes any more reaches no later communicator, and it costs no communicator of its
// own. Every call is made by the thread
// that holds its communicator's call queue's exec_mutex: check() from a collective's wait, the
// rest from Communicator::leave. Tested by tests/mpi/rank_leaves.sh and tests/torch/test_leave.sh.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/world/departures.h"
#include "config.h"

#if RINGDP_HAVE_MPI
#include <mpi.h>

namespace ringdp::comm {

class MpiDepartures final : public Departures {
 public:
  /// Over `user_comm` (MpiTransport::user_comm(), not owned), with `tag` (its MPI_TAG_UB).
  MpiDepartures(MPI_Comm user_comm, int tag);
  /// Cancels the standing receive if the communicator never left; frees nothing collective.
  ~MpiDepartures() override;
  MpiDepartures(const MpiDepartures&) = delete;
  MpiDepartures& operator=(const MpiDepartures&) = delete;

  /// Throws PeerLeft when a rank that left had not finished the collective this rank waits in.
  void check() override;
  void announce(const std::string& why, uint64_t finished, bool frees_shared) override;
  void announce_failure(const std::string& why, uint64_t finished) override;
  bool everyone_left() override;
  bool everyone_frees_shared() const override;
  std::string missing() const override;
  /// Cancels the standing receive; the notices this rank sent are completed at exit, before
  /// MPI_Finalize (mpi_runtime's before_finalize), since a peer may take them only then.
  void stop_listening() override;

  struct NoticeDelay {
    int from = -1, to = -1;
    std::chrono::milliseconds wait{0};
  };
  /// What one rank says of itself, or of the rank it blames.
  struct Report {
    uint64_t finished = 0;
    int32_t failed = 0;  // announce_failure: it failed in collective `finished`, and did not leave
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

 private:
  struct Arrival {
    bool arrived = false;
    bool frees_shared = false;
    int order = 0;  // 1 for the first notice to arrive, 2 for the next...
    Report self, cause;
  };
  /// Takes every notice that has arrived, reposting the receive after each; never blocks.
  void take_arrivals();
  /// Throws about `peer`'s departure, or about the rank it blamed; remembers whom it named, for
  /// this rank's own notice.
  [[noreturn]] void throw_left(int peer);
  void send_notice(const std::string& why, uint64_t finished, bool frees_shared, bool failed);

  MPI_Comm control_ = MPI_COMM_NULL;
  int tag_ = 0;
  int rank_ = 0, size_ = 1;
  bool announced_ = false;
  Report blamed_;  // whom this rank named when a peer's departure failed its collective
  NoticeDelay delay_;  // a test's (RINGDP_TEST_NOTICE_DELAY)
  bool frees_shared_ = false;  // what this rank's own notice said
  std::unique_ptr<Notice> notice_;  // what announce() sent: read by MPI until every send completes
  std::vector<MPI_Request> sends_;  // one per peer
  MPI_Request receive_ = MPI_REQUEST_NULL;
  Notice incoming_;
  int arrived_count_ = 0;
  std::vector<Arrival> arrivals_;  // by peer rank
};

}  // namespace ringdp::comm
#endif

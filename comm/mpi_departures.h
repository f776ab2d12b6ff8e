// MpiDepartures: comm/departures.h over MPI. Each rank keeps one receive posted from any rank on a
// communicator of its own (a duplicate of the communicator's, so no collective's or user's message
// can match it). Leaving sends every peer one notice: why, how many collectives this rank had
// issued, and whether it frees the shared windows. check() tests that receive; once a peer's
// notice is older than kGrace the wait fails. (The grace: a peer that finished its part of a
// collective and left may have sent messages still in flight, on another communicator, which MPI
// does not order with the notice.) Tested by tests/mpi/rank_leaves.sh and tests/torch/test_leave.sh.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/departures.h"
#include "config.h"

#if RINGDP_HAVE_MPI
#include <mpi.h>

namespace ringdp::comm {

class MpiDepartures final : public Departures {
 public:
  /// How long a peer's notice waits for messages it sent before it to arrive.
  static constexpr std::chrono::milliseconds kGrace{500};

  /// Collective over `comm` (it duplicates it); `whole_job`: the world's communicator, whose
  /// leaving waits for every peer.
  MpiDepartures(MPI_Comm comm, bool whole_job);
  /// Cancels the standing receive; frees nothing collective.
  ~MpiDepartures() override;

  /// Throws PeerLeft when a peer's notice arrived more than kGrace ago.
  void check() override;
  bool leave(const std::string& why, uint64_t issued, bool unwinding,
             std::chrono::milliseconds limit) override;

 private:
  struct Notice {
    uint64_t issued = 0;
    int32_t frees_shared = 0;
    char why[244] = {};
  };
  struct Arrival {
    bool arrived = false;
    bool frees_shared = false;
    std::chrono::steady_clock::time_point at;
    std::string why;
    uint64_t issued = 0;
  };
  /// Takes every notice that has arrived, reposting the receive after each; never blocks.
  void take_arrivals();
  [[noreturn]] void throw_left(int peer) const;
  void await_everyone(std::chrono::milliseconds limit);
  void cancel_receive();

  MPI_Comm control_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  bool whole_job_ = false;
  bool left_ = false;
  MPI_Request receive_ = MPI_REQUEST_NULL;
  Notice incoming_;
  int arrived_count_ = 0;
  std::vector<Arrival> arrivals_;  // by peer rank
};

}  // namespace ringdp::comm
#endif

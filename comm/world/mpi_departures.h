// MpiDepartures: comm/world/notice_departures.h's notices over MPI. Each rank keeps one receive
// posted from any rank on the communicator of send/recv, under the one tag no user may take
// (MPI_TAG_UB: user receives always name their tag, and collectives travel elsewhere); leaving
// sends every peer one small notice there. That communicator is never freed
// (comm/transport/mpi/mpi_transport.cpp says why), so a notice that no peer takes any more reaches
// no later communicator, and it costs no communicator of its own. Tested by
// tests/mpi/rank_leaves.sh and tests/torch/test_leave.sh.
#pragma once

#include <vector>

#include "comm/world/notice_departures.h"
#include "config.h"

#if RINGDP_HAVE_MPI
#include <mpi.h>

namespace ringdp::comm {

class MpiDepartures final : public NoticeDepartures {
 public:
  /// Over `user_comm` (MpiTransport::user_comm(), not owned), with `tag` (its MPI_TAG_UB).
  MpiDepartures(MPI_Comm user_comm, int tag);
  /// Cancels the standing receive if the communicator never left; frees nothing collective.
  ~MpiDepartures() override;
  MpiDepartures(const MpiDepartures&) = delete;
  MpiDepartures& operator=(const MpiDepartures&) = delete;

  /// False once MPI is finalized (a program may finalize it itself): nothing can be sent then.
  bool usable() const override;
  /// Cancels the standing receive; the notices this rank sent are completed at exit, before
  /// MPI_Finalize (mpi_runtime's before_finalize), since a peer may take them only then.
  void stop_listening() override;

 private:
  bool receive(Notice& notice, int& from) override;
  void send(int peer, const Notice& notice) override;

  MPI_Comm control_ = MPI_COMM_NULL;
  int tag_ = 0;
  std::vector<MPI_Request> sends_;  // one per peer
  MPI_Request receive_ = MPI_REQUEST_NULL;
  Notice incoming_;
};

}  // namespace ringdp::comm
#endif

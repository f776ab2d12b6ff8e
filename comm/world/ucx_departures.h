// UcxDepartures: comm/world/notice_departures.h's notices over UCX, for a job that no MPI launcher
// started (torchrun, mp.spawn, a framework's launcher: comm/world/store_discovery.cpp). Each rank
// keeps one receive posted from any rank under the notice tag (UcxTransport::receive_notice);
// leaving sends every peer one notice, sent before this rank goes on (a bounded wait: eager, it
// completes once written). A rank that is killed sends nothing: a peer on the same machine sees
// its process end (comm/world/process_identity.h), looked at at most every 100 ms while a wait
// lasts; a peer on another machine sees its connection end, which UCX reports on the endpoints
// made with its peer error handling for exactly those peers (UcxTransport::peer_failure), looked
// at on every check. Ranks on one machine in other PID namespaces that share an IPC namespace
// (containers with --ipc=host) are neither: their kill is known at the timeout.
// Tested by tests/torch/test_leave.sh under a plain launcher without MPI, and across hosts by
// tests/net/torchrun.sh.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "comm/world/notice_departures.h"
#include "comm/world/process_identity.h"
#include "config.h"

#if RINGDP_HAVE_UCX
#include "comm/transport/ucx/ucx_transport.h"

namespace ringdp::comm {

class UcxDepartures final : public NoticeDepartures {
 public:
  /// Over `transport`'s ranks (not owned: the communicator's world holds both, and calls
  /// stop_listening before it lets the transport go), whose processes are `processes`.
  UcxDepartures(UcxTransport& transport, std::vector<ProcessIdentity> processes);
  /// Stops listening if leaving never did (a communicator whose creation failed).
  ~UcxDepartures() override;
  UcxDepartures(const UcxDepartures&) = delete;
  UcxDepartures& operator=(const UcxDepartures&) = delete;

  /// The notices, then the processes of this machine's peers.
  void check() override;
  /// Cancels the standing receive; waits up to 1 s for this rank's notices to be sent.
  void stop_listening() override;

 private:
  bool receive(Notice& notice, int& from) override;
  void send(int peer, const Notice& notice) override;
  /// Throws PeerLeft for a peer whose end end_of tells, with no notice from it.
  void check_ends(bool processes);
  /// How `peer` is seen to have ended without a notice (with `processes`: its process on this
  /// machine ended; always: UCX reports its connection lost), or "" while it is not.
  std::string end_of(int peer, bool processes) const;

  UcxTransport& transport_;
  std::vector<ProcessIdentity> processes_;  // by rank
  std::vector<bool> watched_;  // by rank: on this machine, in this PID namespace
  std::string host_;  // this machine's name, for the message
  std::vector<Request> sends_;
  Request receive_;
  bool listening_ = false;
  Notice incoming_;
  std::chrono::steady_clock::time_point next_look_{};
};

}  // namespace ringdp::comm
#endif

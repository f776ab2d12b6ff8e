// UcxRequests: the UCX requests of a transport's sends and receives that have not ended, so that
// a collective that fails can end them (UcxTransport::abandon_pending): its receives would
// otherwise stay posted into tensors their owner may free, and be written there by a late peer's
// message on a later progress (the departures', the endpoints' close); a send under way reads its
// tensor until it ends. Few are pending at a time (a collective's current steps).
#pragma once

#include <chrono>
#include <utility>
#include <vector>

#include "config.h"

#if RINGDP_HAVE_UCX
#include <ucp/api/ucp.h>

namespace ringdp::comm {

class UcxRequests {
 public:
  /// A request that UCX works on (a receive, or a send).
  void add(void* request, bool receive) { pending_.emplace_back(request, receive); }
  /// Takes an ended request off the list (before its owner releases it).
  void forget(void* request);
  /// Cancels every receive (one a message has matched goes on), drives `worker` until each
  /// request has ended, for at most `bound` (a peer that is gone may never take a send), and
  /// releases them all.
  void abandon(ucp_worker_h worker, std::chrono::milliseconds bound);

 private:
  std::vector<std::pair<void*, bool>> pending_;  // true: a receive
};

}  // namespace ringdp::comm
#endif

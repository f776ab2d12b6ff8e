// UcxRequests: the UCX requests of a transport's sends and receives that have not ended, so that
// a call that fails can end its own (UcxTransport::abandon_pending, wait_all): its receives would
// otherwise stay posted into tensors their owner may free, and be written there by a late peer's
// message on a later progress (the departures', the endpoints' close); a send under way reads its
// tensor until it ends. A user's asynchronous send or receive is held by its Work across calls and
// is ended only by that Work's own failed wait, or at the transport's teardown. Few are pending at a
// time (a collective's current steps, a user's outstanding sends and receives).
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "config.h"

#if RINGDP_HAVE_UCX
#include <ucp/api/ucp.h>

namespace ringdp::comm {

class UcxRequests {
 public:
  struct Entry {
    void* request;
    bool receive;
    bool user;  ///< a user's send or receive (send/recv), not a collective's step
  };
  /// A request that UCX works on.
  void add(void* request, bool receive, bool user) { pending_.push_back(Entry{request, receive, user}); }
  /// Takes an ended request off the list (before its owner releases it).
  void forget(void* request);
  /// Ends the requests `chosen` picks: cancels the receives (one a message has matched goes on),
  /// drives `worker` until each has ended, for at most `bound` (a peer that is gone may never take
  /// a send), and releases them.
  void abandon(ucp_worker_h worker, std::chrono::milliseconds bound,
               const std::function<bool(const Entry&)>& chosen);

 private:
  std::vector<Entry> pending_;
};

}  // namespace ringdp::comm
#endif

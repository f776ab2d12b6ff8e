// Implements comm/transport/ucx/ucx_requests.h.
#include "comm/transport/ucx/ucx_requests.h"

#if RINGDP_HAVE_UCX
#include <algorithm>

namespace ringdp::comm {

void UcxRequests::forget(void* request) {
  // From the newest: a collective's requests end roughly in the order it posted them.
  for (size_t i = pending_.size(); i-- > 0;) {
    if (pending_[i].request != request) continue;
    pending_[i] = pending_.back();
    pending_.pop_back();
    return;
  }
}

void UcxRequests::abandon(ucp_worker_h worker, std::chrono::milliseconds bound,
                          const std::function<bool(const Entry&)>& chosen) {
  std::vector<Entry> ending;
  std::erase_if(pending_, [&](const Entry& e) {
    if (!chosen(e)) return false;
    ending.push_back(e);
    return true;
  });
  for (const Entry& e : ending)
    if (e.receive) ucp_request_cancel(worker, e.request);
  const auto until = std::chrono::steady_clock::now() + bound;
  auto ended = [](const Entry& e) {
    if (ucp_request_check_status(e.request) == UCS_INPROGRESS) return false;
    ucp_request_free(e.request);
    return true;
  };
  for (;;) {
    std::erase_if(ending, ended);
    if (ending.empty() || std::chrono::steady_clock::now() > until) break;
    ucp_worker_progress(worker);
  }
  for (const Entry& e : ending) ucp_request_free(e.request);  // UCX releases each once it ends
}

}  // namespace ringdp::comm
#endif

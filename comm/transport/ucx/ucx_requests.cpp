// Implements comm/transport/ucx/ucx_requests.h.
#include "comm/transport/ucx/ucx_requests.h"

#if RINGDP_HAVE_UCX
namespace ringdp::comm {

void UcxRequests::forget(void* request) {
  // From the newest: a collective's requests end roughly in the order it posted them.
  for (size_t i = pending_.size(); i-- > 0;) {
    if (pending_[i].first != request) continue;
    pending_[i] = pending_.back();
    pending_.pop_back();
    return;
  }
}

void UcxRequests::abandon(ucp_worker_h worker, std::chrono::milliseconds bound) {
  for (auto& [request, receive] : pending_)
    if (receive) ucp_request_cancel(worker, request);
  const auto until = std::chrono::steady_clock::now() + bound;
  auto ended = [](const std::pair<void*, bool>& p) {
    if (ucp_request_check_status(p.first) == UCS_INPROGRESS) return false;
    ucp_request_free(p.first);
    return true;
  };
  for (;;) {
    std::erase_if(pending_, ended);
    if (pending_.empty() || std::chrono::steady_clock::now() > until) break;
    ucp_worker_progress(worker);
  }
  for (auto& p : pending_) ucp_request_free(p.first);  // UCX releases each once it ends
  pending_.clear();
}

}  // namespace ringdp::comm
#endif

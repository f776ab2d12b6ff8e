// Implements comm/transport/ucx/ucx_transport.h (the design is described there).
#include "comm/transport/ucx/ucx_transport.h"

#if RINGDP_HAVE_UCX
#include <ucs/debug/log_def.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "comm/bootstrap/mpi_runtime.h"
#include "comm/transport/envelope.h"
#include "comm/transport/shm/shared_slots.h"
#include "comm/transport/transport_out_of_band.h"
#include "comm/transport/ucx/ucx_tags.h"
#include "core/error.h"
#include "kernels/reduce_into.h"

namespace ringdp::comm {

namespace {

// UCX writes its log to standard output unless UCX_LOG_FILE says otherwise: a program's output
// (`python3 train.py | tail -n 2`) then ends with UCX's lines instead of its own (the docs suite's
// seed_fixed.py --spawn lost its last two lines so, once). Its lines go to standard error here,
// marked as UCX's, and UCX_LOG_LEVEL still chooses which.
ucs_log_func_rc_t log_to_stderr(const char* file, unsigned line, const char*, ucs_log_level_t level,
                                const ucs_log_component_config_t* component, const char* format, va_list ap) {
  if (level > component->log_level) return UCS_LOG_FUNC_RC_CONTINUE;
  char message[512];
  std::vsnprintf(message, sizeof message, format, ap);
  const char* base = std::strrchr(file, '/');
  std::fprintf(stderr, "ringdp: UCX %s (%s:%u): %s\n", ucs_log_level_names[level], base ? base + 1 : file,
               line, message);
  return UCS_LOG_FUNC_RC_STOP;
}

void ucx_check(ucs_status_t status, const char* call) {
  RINGDP_CHECK(status == UCS_OK, "UCX: ", call, " failed: ", ucs_status_string(status),
               " (UCX_TLS and UCX_NET_DEVICES choose UCX's transports)");
}

// What a request handle holds while UCX works on it: UCX's request pointer. 0: done at once.
void* ucx_request(const Request& r) { return reinterpret_cast<void*>(r.handle); }

}  // namespace

UcxTransport::UcxTransport(std::unique_ptr<Transport> bootstrap, std::chrono::milliseconds timeout)
    : bootstrap_(std::move(bootstrap)),
      out_of_band_(std::make_unique<TransportOutOfBand>(*bootstrap_)),
      rank_(bootstrap_->rank()),
      size_(bootstrap_->size()) {
  try {
    open(timeout);
  } catch (...) {
    release();  // no destructor runs for a constructor that throws
    throw;
  }
}

UcxTransport::UcxTransport(std::unique_ptr<OutOfBand> out_of_band, std::chrono::milliseconds timeout,
                           bool yield, std::vector<bool> reported)
    : out_of_band_(std::move(out_of_band)),
      rank_(out_of_band_->rank()),
      size_(out_of_band_->size()),
      yield_(yield),
      reported_(std::move(reported)) {
  try {
    open(timeout);
  } catch (const std::exception& e) {
    out_of_band_->fail(e.what());  // the peers waiting in the store hear why, not the timeout
    release();
    throw;
  }
}

void UcxTransport::open(std::chrono::milliseconds timeout) {
  static std::once_flag log_handler;
  std::call_once(log_handler, [] {
    if (!std::getenv("UCX_LOG_FILE")) ucs_log_push_handler(log_to_stderr);
  });
  ucp_config_t* config = nullptr;
  ucx_check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  // Eager messages only, unless UCX_RNDV_THRESH says otherwise. A rendezvous send completes when
  // its receiver acknowledges (or, with put, the receiver's completes on the sender's note), and
  // UCX sends that last message only while the worker is progressed: a rank whose last collective
  // on a group had completed progressed that worker no more, and its peer waited forever (4 runs
  // of 5 of tests/torch/group_control.py over UCX, 3 ranks, after a 32 MiB all_reduce; 0 of 6
  // with eager messages). An eager send completes once its data has left, so no rank owes its
  // peers anything after its own requests are done. The price, measured here (2 ranks, ring
  // all_reduce): 16 MiB at 4.7 GB/s instead of 6.5 (docs/ucx.md).
  if (!std::getenv("UCX_RNDV_THRESH")) {
    const ucs_status_t eager = ucp_config_modify(config, "RNDV_THRESH", "inf");
    if (eager != UCS_OK) ucp_config_release(config);
    ucx_check(eager, "ucp_config_modify(RNDV_THRESH=inf)");
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  const ucs_status_t made = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  ucx_check(made, "ucp_init");
  ucp_worker_params_t worker{};
  worker.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // One thread at a time: the communicator's worker, or a point-to-point wait under its lock.
  worker.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  ucx_check(ucp_worker_create(context_, &worker, &worker_), "ucp_worker_create");
  ucp_address_t* address = nullptr;
  size_t address_bytes = 0;
  ucx_check(ucp_worker_get_address(worker_, &address, &address_bytes), "ucp_worker_get_address");
  const auto addresses =
      out_of_band_->all_gather(std::span(reinterpret_cast<const char*>(address), address_bytes));
  ucp_worker_release_address(worker_, address);
  endpoints_.resize(static_cast<size_t>(size_), nullptr);
  reported_.resize(static_cast<size_t>(size_), false);
  failures_.assign(static_cast<size_t>(size_), std::string());
  watches_.clear();
  for (int peer = 0; peer < size_; ++peer) watches_.push_back(EndpointWatch{this, peer});
  for (int peer = 0; peer < size_; ++peer) {
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(addresses[static_cast<size_t>(peer)].data());
    // UCX's peer error handling only where nothing else sees a peer end: UCX 1.13's shared-memory
    // transports (posix, sysv, self) lack it, so asking for it on one host left only TCP over the
    // loopback (8 us at 8 B and 1.7 GB/s against MPI's 0.8 us and 6.5, measured here). A peer that
    // leaves is told by ringdp's departure notices (set_watch), as over MPI; one killed on this
    // machine is seen to end by its peers (comm/world/ucx_departures.h); one killed elsewhere,
    // whose connection only TCP carries, is what UCX reports here (endpoint_failed).
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    if (reported_[static_cast<size_t>(peer)] && peer != rank_) {
      ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
      ep.err_handler.cb = &UcxTransport::endpoint_failed;
      ep.err_handler.arg = &watches_[static_cast<size_t>(peer)];
    }
    ucx_check(ucp_ep_create(worker_, &ep, &endpoints_[static_cast<size_t>(peer)]), "ucp_ep_create");
  }
  connect(timeout);
}

void UcxTransport::connect(std::chrono::milliseconds timeout) {
  // An endpoint is wired up only as both workers progress. A message from every rank to every
  // rank now does it, so that a later small send completes on this rank alone, as an MPI send
  // does eagerly, even to a peer that never receives it (a group destroyed before its peer
  // looked: tests/mpi/test_groups.cpp). Bounded by the collective timeout: a peer UCX cannot
  // reach (UCX_TLS, UCX_NET_DEVICES) is named, not waited for.
  std::vector<Request> hello;
  for (int peer = 0; peer < size_; ++peer) {
    hello.push_back(irecv(peer, nullptr, 0, 0));
    hello.push_back(isend(peer, nullptr, 0, 0));
  }
  const auto until = std::chrono::steady_clock::now() + timeout;
  IdleBackoff backoff(yields_when_idle());
  for (;;) {
    ucp_worker_progress(worker_);
    bool all = true;
    for (Request& r : hello) all = finish(r) && all;
    if (all) return;
    if (std::chrono::steady_clock::now() > until) {
      std::string missing;
      for (size_t i = 0; i < hello.size(); i += 2)
        if (hello[i].handle || hello[i + 1].handle)
          missing += (missing.empty() ? "" : ", ") + std::to_string(i / 2);
      RINGDP_FAIL("rank ", rank_, ": UCX connected to no rank of ", missing,
                  " within the collective timeout (", timeout.count() / 1000.0,
                  " s): check UCX_TLS and UCX_NET_DEVICES on every host");
    }
    backoff.pause();
  }
}

void UcxTransport::endpoint_failed(void* arg, ucp_ep_h, ucs_status_t status) {
  const auto* watch = static_cast<const EndpointWatch*>(arg);
  std::string& failure = watch->transport->failures_[static_cast<size_t>(watch->peer)];
  if (failure.empty()) failure = ucs_status_string(status);
}

UcxTransport::~UcxTransport() { release(); }

void UcxTransport::set_shared_slots(std::unique_ptr<SharedSlots> slots) { slots_ = std::move(slots); }

void UcxTransport::release() {
  if (in_forked_child()) return;  // the parent's worker: nothing of it is this process's to close
  if (worker_)
    pending_.abandon(worker_, std::chrono::seconds(1), [](const UcxRequests::Entry&) { return true; });
  // A flush lets the last eager messages leave; a peer that is gone never acknowledges it, so the
  // flush has a bound, and a close still pending then is handed back to UCX unfinished.
  std::vector<void*> closing;
  for (size_t peer = 0; peer < endpoints_.size(); ++peer) {
    if (!endpoints_[peer]) continue;
    ucp_request_param_t param{};
    if (!failures_[peer].empty()) {  // a failed endpoint has nothing left to flush (UCX's rule)
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    }
    void* request = ucp_ep_close_nbx(endpoints_[peer], &param);
    if (request && !UCS_PTR_IS_ERR(request)) closing.push_back(request);
  }
  endpoints_.clear();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!closing.empty() && std::chrono::steady_clock::now() < until) {
    ucp_worker_progress(worker_);
    std::erase_if(closing, [](void* r) {
      if (ucp_request_check_status(r) == UCS_INPROGRESS) return false;
      ucp_request_free(r);
      return true;
    });
  }
  for (void* r : closing) ucp_request_free(r);
  if (worker_) ucp_worker_destroy(worker_);
  if (context_) ucp_cleanup(context_);
  worker_ = nullptr;
  context_ = nullptr;
}

Request UcxTransport::isend(int peer, const void* data, size_t bytes, int tag) {
  RINGDP_CHECK(peer >= 0 && peer < size_, "rank ", rank_, ": send to rank ", peer, " of ", size_);
  ucp_request_param_t param{};
  void* request =
      ucp_tag_send_nbx(endpoints_[static_cast<size_t>(peer)], data, bytes, wire_tag(tag, rank_), &param);
  // A send refused by a lost peer: the departures name it (this transport's reports, or the world's
  // when this is the hierarchical path's), as for a receive.
  if (UCS_PTR_IS_ERR(request) && tag < kUserTagBase) check_watch();  // send/recv are not watched
  RINGDP_CHECK(!UCS_PTR_IS_ERR(request), "rank ", rank_, " could not send ", bytes, " bytes of ",
               describe_tag(tag), " to rank ", peer, ": UCX says ",
               ucs_status_string(UCS_PTR_STATUS(request)));
  if (request) pending_.add(request, false, tag >= kUserTagBase);
  return Request{.handle = reinterpret_cast<uintptr_t>(request), .peer = peer, .tag = tag, .bytes = bytes};
}

Request UcxTransport::irecv(int peer, void* data, size_t bytes, int tag) {
  const bool user = tag >= kUserTagBase;
  RINGDP_CHECK(peer == kAnySource ? user : peer >= 0 && peer < size_, "rank ", rank_, ": receive from rank ",
               peer, " of ", size_);
  // A collective's receive takes its peer's next message whatever ringdp tag it carries, and checks
  // it (the envelope check); a user's matches the tag it names, from its peer or any.
  ucp_tag_t want = wire_tag(tag, std::max(peer, 0));
  ucp_tag_t mask = user ? ~ucp_tag_t{0} : kUserBit | kRankMask;
  if (peer == kAnySource) {
    want &= ~kRankMask;
    mask &= ~kRankMask;
  }
  // Always a request (NO_IMM_CMPL), whose ucp_tag_recv_request_test gives the sender's tag and
  // the length: UCX 1.13 does not fill recv_info, so a receive completed at once (a NULL return)
  // had no tag to check (the envelope check then saw tag 0).
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  void* request = ucp_tag_recv_nbx(worker_, data, bytes, want, mask, &param);
  RINGDP_CHECK(request && !UCS_PTR_IS_ERR(request), "rank ", rank_, " could not receive ", describe_tag(tag),
               " from rank ", peer, ": UCX says ", ucs_status_string(UCS_PTR_STATUS(request)));
  pending_.add(request, true, user);
  return Request{.handle = reinterpret_cast<uintptr_t>(request),
                 .peer = peer,
                 .tag = tag,
                 .bytes = bytes,
                 .receive = true};
}

std::string UcxTransport::check_receive(const Request& r, ucs_status_t status, ucp_tag_t tag,
                                        size_t length) const {
  const int sender = r.peer == kAnySource ? static_cast<int>(tag & kRankMask) : r.peer;
  if (status == UCS_ERR_MESSAGE_TRUNCATED)
    return detail::concat("rank ", rank_, " expected ", r.bytes, " bytes of ", describe_tag(r.tag),
                          " from rank ", sender,
                          " and got a longer message (UCX cut it at the receive's end): ",
                          r.tag >= kUserTagBase ? "the sender sent more than this receive's tensor holds"
                                                : "the ranks passed different counts or called different "
                                                  "collectives");
  if (status != UCS_OK)
    return detail::concat("rank ", rank_, " could not receive ", describe_tag(r.tag), " from rank ", sender,
                          ": UCX says ", ucs_status_string(status));
  const int got = ringdp_tag(tag);
  if (r.tag < kUserTagBase && got != r.tag)
    return detail::concat("rank ", rank_, " is in ", describe_tag(r.tag), " but rank ", sender,
                          " sent it a message of ", describe_tag(got),
                          ": the ranks called different collectives");
  if (length != r.bytes)
    return detail::concat("rank ", rank_, " expected ", r.bytes, " bytes of ", describe_tag(r.tag),
                          " from rank ", sender, " and got ", length, ": the ranks passed different counts");
  return {};
}

bool UcxTransport::finish(Request& request) {
  void* ucx = ucx_request(request);
  if (!ucx) return true;
  if (request.receive) {
    ucp_tag_recv_info_t info{};
    const ucs_status_t status = ucp_tag_recv_request_test(ucx, &info);
    if (status == UCS_INPROGRESS) return false;
    pending_.forget(ucx);
    ucp_request_free(ucx);
    request.handle = 0;
    const std::string error = check_receive(request, status, info.sender_tag, info.length);
    RINGDP_CHECK(error.empty(), error);
    request.peer = static_cast<int>(info.sender_tag & kRankMask);
    return true;
  }
  const ucs_status_t status = ucp_request_check_status(ucx);
  if (status == UCS_INPROGRESS) return false;
  pending_.forget(ucx);
  ucp_request_free(ucx);
  request.handle = 0;
  if (status != UCS_OK && request.tag < kUserTagBase) check_watch();  // as in isend
  RINGDP_CHECK(status == UCS_OK, "rank ", rank_, " could not send ", request.bytes, " bytes of ",
               describe_tag(request.tag), " to rank ", request.peer, ": UCX says ",
               ucs_status_string(status));
  return true;
}

Request UcxTransport::receive_notice(void* data, size_t bytes) {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  void* request = ucp_tag_recv_nbx(worker_, data, bytes, notice_tag(0), kNoticeMask, &param);
  RINGDP_CHECK(request && !UCS_PTR_IS_ERR(request), "rank ", rank_,
               " could not post the receive of departure notices: UCX says ",
               ucs_status_string(UCS_PTR_STATUS(request)));
  return Request{
      .handle = reinterpret_cast<uintptr_t>(request), .peer = kAnySource, .bytes = bytes, .receive = true};
}

Request UcxTransport::send_notice(int peer, const void* data, size_t bytes) {
  ucp_request_param_t param{};
  void* request =
      ucp_tag_send_nbx(endpoints_[static_cast<size_t>(peer)], data, bytes, notice_tag(rank_), &param);
  // A notice that cannot be sent is let go: the peer then learns of this rank some other way.
  if (UCS_PTR_IS_ERR(request)) request = nullptr;
  return Request{.handle = reinterpret_cast<uintptr_t>(request), .peer = peer, .bytes = bytes};
}

bool UcxTransport::notice_done(Request& request, int& sender) {
  sender = -1;
  void* ucx = ucx_request(request);
  if (!ucx) return true;
  ucp_tag_recv_info_t info{};
  const ucs_status_t status =
      request.receive ? ucp_tag_recv_request_test(ucx, &info) : ucp_request_check_status(ucx);
  if (status == UCS_INPROGRESS) return false;
  ucp_request_free(ucx);
  request.handle = 0;
  if (request.receive && status == UCS_OK && info.length == request.bytes)
    sender = static_cast<int>(info.sender_tag & kRankMask);
  return true;
}

void UcxTransport::cancel_notice(Request& request) {
  void* ucx = ucx_request(request);
  if (!ucx) return;
  if (request.receive) ucp_request_cancel(worker_, ucx);
  ucp_request_free(ucx);  // a send still under way finishes on its own, then UCX releases it
  request.handle = 0;
}

bool UcxTransport::test(Request& request) {
  ucp_worker_progress(worker_);
  return finish(request);
}

void UcxTransport::wait_all(std::span<Request> requests) {
  bool late = false;  // the deadline passed; one more poll decides (Transport::poll_until says why)
  IdleBackoff backoff(yields_when_idle());
  try {
    for (uint32_t polls = 0;; ++polls) {
      while (ucp_worker_progress(worker_) != 0) {
      }
      bool all = true;
      for (Request& r : requests) all = finish(r) && all;
      if (all) return;
      if (late) expire();
      const bool slept = backoff.pause();
      if (slept || (polls & 255u) == 255u) late = deadline_passed();
    }
  } catch (...) {
    // This wait's own requests, a user's too: the call they belong to has failed.
    std::vector<void*> mine;
    for (Request& r : requests) {
      if (r.handle) mine.push_back(ucx_request(r));
      r.handle = 0;
    }
    pending_.abandon(worker_, std::chrono::seconds(1), [&](const UcxRequests::Entry& e) {
      return std::find(mine.begin(), mine.end(), e.request) != mine.end();
    });
    throw;
  }
}

void UcxTransport::abandon_pending() {
  // A collective's steps run one at a time, so every collective request still pending is the failed
  // call's; a user's asynchronous send or receive belongs to its own Work.
  pending_.abandon(worker_, std::chrono::seconds(1), [](const UcxRequests::Entry& e) { return !e.user; });
}

void UcxTransport::reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) {
  kernels::reduce_into_cpu(dst, src, count, dtype, op);
}

void UcxTransport::copy(void* dst, const void* src, size_t bytes) {
  if (bytes && dst != src) std::memmove(dst, src, bytes);
}

Transport& UcxTransport::library() {
  RINGDP_CHECK(bootstrap_,
               "--algo native: UCX has no collectives of its own, and this job was started without MPI "
               "(its ranks found each other through a store); use ringdp's algorithms (auto)");
  return *bootstrap_;
}

void UcxTransport::native_all_reduce(const void* input, void* output, int64_t count, DType dtype,
                                     ReduceOp op) {
  library().native_all_reduce(input, output, count, dtype, op);
}
void UcxTransport::native_reduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                                 int root) {
  library().native_reduce(input, output, count, dtype, op, root);
}
void UcxTransport::native_broadcast(void* buffer, int64_t count, DType dtype, int root) {
  library().native_broadcast(buffer, count, dtype, root);
}
void UcxTransport::native_all_gather(const void* input, void* output, int64_t chunk_count, DType dtype) {
  library().native_all_gather(input, output, chunk_count, dtype);
}
void UcxTransport::native_reduce_scatter(const void* input, void* output, int64_t chunk_count, DType dtype,
                                         ReduceOp op) {
  library().native_reduce_scatter(input, output, chunk_count, dtype, op);
}
void UcxTransport::native_barrier() { library().native_barrier(); }
void UcxTransport::native_exchange(const BlockExchange& exchange) { library().native_exchange(exchange); }

void UcxTransport::bootstrap_broadcast(void* data, size_t bytes) {
  if (bootstrap_) return bootstrap_->bootstrap_broadcast(data, bytes);
  const auto all = out_of_band_->all_gather(std::span(static_cast<const char*>(data), bytes));
  std::copy(all[0].begin(), all[0].end(), static_cast<char*>(data));
}

std::string UcxTransport::version() {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  return detail::concat(major, ".", minor, ".", release);
}

}  // namespace ringdp::comm
#endif

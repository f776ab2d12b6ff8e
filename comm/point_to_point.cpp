// Communicator::send and recv (comm/communicator.h): messages between two ranks, numbered apart
// from the collectives. Tested by tests/mpi/test_comm_async.cpp and tests/mpi/test_comm_errors.cpp.
#include <algorithm>
#include <exception>
#include <thread>

#include "comm/communicator_state.h"
#include "comm/execution/host_staging.h"
#include "comm/transport/envelope.h"
#include "comm/transport/idle_backoff.h"

namespace ringdp::comm {

Work Communicator::send(const Tensor& tensor, int peer, int tag, CollectiveOptions opts) {
  return point_to_point(CollectiveKind::send, tensor, peer, tag, opts);
}

Work Communicator::recv(Tensor& tensor, int peer, int tag, CollectiveOptions opts) {
  return point_to_point(CollectiveKind::recv, tensor, peer, tag, opts);
}

Work Communicator::recv_any(Tensor& tensor, int* source, int tag, CollectiveOptions opts) {
  RINGDP_CHECK(source, "recv_any: no place for the sender's rank (source is null)");
  RINGDP_CHECK(size_ > 1, "recv_any: a world of one rank has no other rank to receive from");
  return point_to_point(CollectiveKind::recv, tensor, kAnySource, tag, opts, source);
}

namespace {

void check_peer_and_tag(CollectiveKind kind, const Tensor& tensor, int peer, int tag, int rank, int size,
                        int tag_upper_bound) {
  const char* what = kind_name(kind);
  RINGDP_CHECK(tensor.defined(), what, ": undefined tensor");
  RINGDP_CHECK(
      (peer >= 0 && peer < size && peer != rank) || (peer == kAnySource && kind == CollectiveKind::recv),
      what, ": peer ", peer, " is not another rank (rank ", rank, " of ", size, "; expected 0..", size - 1,
      " other than ", rank, ")");
  // MPI_TAG_UB itself carries ringdp's departure notices (comm/world/mpi_departures.h).
  const int max_tag = std::min(tag_upper_bound - 1, kUserTagBase - 1);
  RINGDP_CHECK(tag >= 0 && tag <= max_tag, what, ": tag ", tag, " out of range (expected 0 to ", max_tag,
               ", one below MPI's tag upper bound MPI_TAG_UB here)");
}

struct Pending {
  Tensor host;
  void* stream = nullptr;  ///< the caller's CUDA stream, where a receive's bytes go back to the device
  bool blocking_wait = false;  ///< CommOptions::blocking_wait: the host waits for them to land
  Request request;
  int* source = nullptr;  ///< recv_any's: where the sender's rank goes
  std::exception_ptr failed;  ///< the first test's error: MPI released the request with it
  /// transport.test, once more after an error only to rethrow it: a retry would find the request
  /// released and report the receive done, its tensor partly stale.
  bool test(Transport& transport) {
    if (failed) std::rethrow_exception(failed);
    try {
      return transport.test(request);
    } catch (...) {
      failed = std::current_exception();
      throw;
    }
  }
  /// A receive's bytes, from the host copy they landed in to the caller's tensor (itself on the host).
  void deliver(CollectiveKind kind, Tensor& target) const {
    if (kind == CollectiveKind::recv) {
      write_back(target, host, stream, blocking_wait);
    }
    if (source) *source = request.peer;
  }
};

}  // namespace

Work Communicator::point_to_point(CollectiveKind kind, Tensor tensor, int peer, int tag,
                                  const CollectiveOptions& requested, int* source) {
  State& state = *state_;
  Transport& transport = state.routes_.host();
  check_peer_and_tag(kind, tensor, peer, tag, rank_, size_, transport.tag_upper_bound());
  // A posted message must not wait in the ordered queue for its partner, or an asynchronous
  // send followed by a receive (the usual ring exchange) would deadlock: the queued part only
  // posts it, and the Work's wait() completes it.
  auto pending = std::make_shared<Pending>();
  pending->source = source;
  pending->stream = requested.stream;
  const Issue issue{.kind = kind, .dtype = tensor.dtype(), .count = tensor.numel(), .requested = requested};
  auto post = [&transport, kind, peer, tag, pending, async = requested.async](Call& call, const Tensor&,
                                                                              Tensor& tensor) {
    call.ctx.position.waiting_for_rank = peer;
    pending->host = call.view(tensor);  // a CUDA tensor's host copy, in the caller's stream order
    pending->blocking_wait = call.blocking_wait;
    void* data = pending->host.data_ptr();
    const size_t bytes = pending->host.nbytes();
    pending->request = kind == CollectiveKind::send ? transport.isend(peer, data, bytes, kUserTagBase + tag)
                                                    : transport.irecv(peer, data, bytes, kUserTagBase + tag);
    if (async) return;
    transport.wait(pending->request);
    pending->deliver(kind, tensor);
  };
  Work posted = state.executor_.submit(issue, tensor, tensor, post);
  if (!requested.async) return posted;
  // Finishing polls, taking the execution lock for one test at a time: blocking in a wait while
  // holding it would keep a collective queued behind this call from starting, and the peer may
  // send only after that collective (a receive, an all_reduce, then wait() on the receive).
  Position where{.kind = kind,
                 .sequence = state.executor_.last_p2p_sequence(),
                 .algorithm = Algorithm::native,
                 .count = tensor.numel(),
                 .dtype = tensor.dtype(),
                 .waiting_for_rank = peer};
  Executor& executor = state.executor_;
  // The timeout as issued: set_timeout may change it, on the worker, while this polls elsewhere.
  auto finish = [&executor, &transport, kind, tensor, pending, where,
                 timeout = executor.options().timeout]() mutable {
    const auto deadline = Transport::Clock::now() + timeout;
    IdleBackoff backoff(true);  // it polls beside the worker, which needs the execution lock and a core
    for (;;) {
      {
        std::lock_guard exec(executor.queue().exec_mutex());
        if (pending->test(transport)) break;
      }
      if (Transport::Clock::now() > deadline) executor.report_deadline(where);
      backoff.pause();
    }
    pending->deliver(kind, tensor);
  };
  auto poll = [&executor, &transport, pending] {
    std::unique_lock exec(executor.queue().exec_mutex(), std::try_to_lock);
    return exec.owns_lock() && pending->test(transport);
  };
  return Work::then(posted, std::move(finish), std::move(poll));
}

}  // namespace ringdp::comm

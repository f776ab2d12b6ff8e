// Implements comm/execution/execution.h (the contract is documented there).
#include "comm/execution/execution.h"

#include <csignal>
#include <cstdio>
#include <thread>

#include "comm/algorithms/fingerprint.h"
#include "comm/bootstrap/mpi_runtime.h"
#include "comm/execution/host_staging.h"
#include "comm/refused_alike.h"
#include "comm/transport/envelope.h"
#include "comm/transport/shm/shared_slots.h"
#include "comm/world/departures.h"
#include "core/debug_level.h"
#include "core/settings.h"

namespace ringdp::comm {

const Tensor& Call::view(const Tensor& t) {
  if (ctx.transport.device_memory() || t.device().is_cpu()) return t;
  Tensor& slot = staged[staged[0].defined() ? 1 : 0];
  slot = host_copy(t, requested);
  return slot;
}

void Call::write_back(Tensor& target, const Tensor& host) const {
  comm::write_back(target, host, requested.stream, blocking_wait);
}

CollectiveContext Call::context_on(Transport& transport) {
  CollectiveContext other = executor->armed(transport, ctx.dtype, ctx.tag);
  other.op = ctx.op;
  return other;
}

Executor::Executor(Routes& routes, const CommOptions& options, int rank, int size, int tag_upper_bound)
    : routes_(routes), options_(options), rank_(rank), size_(size) {
  sequence_bits_ = sequence_bits_for(tag_upper_bound);
  // A world of one has no peer to compare with.
  host_slots_ = size > 1 ? routes.host().shared_slots() : nullptr;
  trace_ = settings::flag(settings::Id::trace).value_or(false);
  check_calls_ = debug_level() == DebugLevel::detail;
  watchers_ = check_calls_ || !faults_.empty();
  if (!mpi_allows_worker_thread()) queue_->set_caller_thread_only();
}

void Executor::kill(const Issue& issue, uint64_t sequence) {
  std::fprintf(stderr, "ringdp: rank %d: RINGDP_FAULT kill at %s #%llu\n", rank_, kind_name(issue.kind),
               static_cast<unsigned long long>(sequence));
  std::raise(SIGKILL);
  std::abort();  // SIGKILL cannot be caught; this only tells the compiler
}

void Executor::throw_closed(const char* what) const {
  RINGDP_FAIL(what, " on rank ", rank_, ": this communicator ", closed_why_, "; it runs no more calls");
}

void Executor::execute(const Issue& issue, uint64_t sequence, const FaultAction& fault, BodyRef body) {
  check_open(kind_name(issue.kind));  // again, under the lock: a call queued before the close
  if (fault.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(fault.delay_ms));
  position_ = Position{.kind = issue.kind,
                       .sequence = sequence,
                       .algorithm = issue.algorithm,
                       .count = issue.count,
                       .dtype = issue.dtype,
                       .shape = issue.shape};
  Transport& routed = routes_.transport(issue.route);
  // The library's own collectives may live elsewhere: MPI without CUDA support takes host copies.
  Transport& transport = issue.algorithm == Algorithm::native ? routed.native_transport() : routed;
  Call call{
      // MPI's own collectives block outside the watchdog (docs/errors.md): no clock read for them.
      .ctx = armed(transport, issue.dtype,
                   encode_tag(issue.kind, issue.dtype, issue.op, issue.algorithm, sequence, sequence_bits_),
                   issue.algorithm != Algorithm::native || transport.device_memory()),
      .algorithm = issue.algorithm,
      .executor = this,
      .count_delta = fault.count_delta,
      .timeout = options_.timeout,
      .blocking_wait = options_.blocking_wait,
      .requested = issue.requested,
      .settled = false,
      .staged = {}};
  call.ctx.corrupt_next_receive = fault.corrupt;
  transport.begin_collective(issue.requested.stream, issue.requested.ready);
  const bool collective = issue.kind != CollectiveKind::send && issue.kind != CollectiveKind::recv;
  if (check_calls_ && size_ > 1 && collective)
    check_same_call(issue, sequence, call.effective(issue.count),
                    encode_tag(CollectiveKind::all_gather, DType::int64, ReduceOp::sum, Algorithm::automatic,
                               sequence, sequence_bits_));
  // Peers on this host that wait long on this rank look here for a call that differs. After the
  // DETAIL check, whose report names more, so that its exchange never meets this one's.
  if (host_slots_ && !transport.device_memory() && collective) announce(sequence, call.ctx.tag);
  timeline::Clock::time_point began{};
  if (timeline::enabled()) began = timeline::Clock::now();
  // A failed call is remembered, and what it left pending on the transport is let go (a request
  // on memory the caller may free).
  const auto failed = [&] {
    first_failed_ = std::min(first_failed_, sequence);
    transport.abandon_pending();
  };
  try {
    body(call);
    call.ctx.end_steps();
    call.settle();
  } catch (const PeerLeft& e) {
    failed();
    const std::string report = detail::concat(position_.describe(), ": ", e.what());
    close("is broken: " + report);  // its peers disagree on where they are now
    throw PeerLeft(report);
  } catch (const RefusedAlike& e) {
    // Every rank refused it alike: still in step, the communicator goes on, and this is no
    // failure a notice must report (finished() counts on past it, as every peer's does).
    throw RefusedAlike(with_what_was_passed(e.what()));
  } catch (const Error& e) {
    failed();
    const std::string what = collective ? with_what_was_passed(e.what()) : e.what();
    if (collective) fail_collective(what);
    // A CUDA or NCCL error names the call that failed; say which collective and step it was in.
    if (transport.device_memory())
      throw Error(detail::concat(position_.describe(), " on rank ", rank_, ": ", what));
    throw Error(what);
  } catch (...) {
    failed();
    throw;
  }
  if (began != timeline::Clock::time_point{}) record_collective(issue, sequence, began);
}

std::string Executor::with_what_was_passed(const std::string& what) const {
  // A count that differs is found as a chunk or a slot of other bytes (issue #47 item 8: "expected
  // 67840 bytes ... got 67844"); each rank names what it passed, and the ranks told by a failure
  // notice name theirs in their own message (Position::describe), so every rank's count is said.
  return detail::concat(what, "; rank ", rank_, " passed ", position_.count, " x ",
                        dtype_name(position_.dtype), position_.shape.suffix(), " to ",
                        kind_name(position_.kind), " #", position_.sequence);
}

void Executor::fail_collective(const std::string& why) {
  // The peers may wait in this collective for messages this rank will never send (a count that
  // differs is found by one rank of a ring): tell them, so that each fails in seconds naming this
  // rank, instead of at the timeout. Those messages would also meet a later call's receives.
  close("is broken: " + why);
  if (departures_) departures_->announce_failure(why, finished());
}

void Executor::announce(uint64_t sequence, int tag) { host_slots_->announce(sequence, tag); }

void Executor::announce_direct(const Issue& issue) {
  host_slots_->announce(position_.sequence, encode_tag(issue.kind, issue.dtype, issue.op, issue.algorithm,
                                                       position_.sequence, sequence_bits_));
}

void Executor::check_same_call(const Issue& issue, uint64_t sequence, int64_t count, int tag) {
  const Fingerprint mine{static_cast<int64_t>(issue.kind),
                         static_cast<int64_t>(issue.op),
                         static_cast<int64_t>(issue.dtype),
                         issue.per_rank_count ? Fingerprint::kPerRankCount : count,
                         issue.root,
                         static_cast<int64_t>(sequence),
                         static_cast<int64_t>(issue.algorithm),
                         static_cast<int64_t>(issue.layout)};
  // A host-side check: its exchange runs over the host transport whatever the tensors' device.
  // Its tag is that of what it is, an all-gather of int64 words, whatever the call: ranks in
  // different calls reach the comparison, which names both, instead of the envelope check.
  CollectiveContext host = armed(routes_.host(), issue.dtype, tag);
  const std::string mismatch = compare_fingerprints(host, mine);
  if (!mismatch.empty()) {
    std::fprintf(stderr, "ringdp: rank %d: %s; ending the job\n", rank_, mismatch.c_str());
    abort_job(1);
  }
}

void Executor::check_pairwise_counts(std::span<const int64_t> send_counts,
                                     std::span<const int64_t> recv_counts, int tag) {
  CollectiveContext host = armed(routes_.host(), DType::int64, tag);
  const std::string mismatch = compare_pairwise_counts(host, send_counts, recv_counts);
  if (!mismatch.empty()) {
    std::fprintf(stderr, "ringdp: rank %d: %s; ending the job\n", rank_, mismatch.c_str());
    abort_job(1);
  }
}

CollectiveContext Executor::armed(Transport& transport, DType dtype, int tag, bool watched) {
  if (watched) {
    if (!transport.has_expiry_handler())
      transport.set_deadline(Transport::Clock::time_point::max(), [this] { report_deadline(position_); });
    transport.set_timeout(options_.timeout);
  }
  return CollectiveContext{.transport = transport,
                           .dtype = dtype,
                           .op = ReduceOp::sum,
                           .position = position_,
                           .segment_bytes = options_.segment_bytes,
                           .trace = trace_,
                           .tag = tag,
                           .requests = requests_,
                           .observer = observer_ ? &observer_ : nullptr};
}

void Executor::set_step_observer(StepObserver observer) {
  // Read by the worker as each collective is armed: wait for those already issued.
  queue_->run(
      [this, observer = std::move(observer)]() mutable {
        observer_ = std::move(observer);
        watchers_ = check_calls_ || !faults_.empty() || observer_;
      },
      false);
}

void Executor::record_collective(const Issue& issue, uint64_t sequence, timeline::Clock::time_point began) {
  timeline::complete(
      "collective",
      // Each group's worker records on the one comm row: the label tells overlapping events apart.
      detail::concat(kind_name(issue.kind), " #", sequence, " ", algorithm_name(issue.algorithm), on_which()),
      began, timeline::Clock::now(), timeline::thread_row(),
      detail::concat("\"count\": ", issue.count,
                     ", \"bytes\": ", issue.count * static_cast<int64_t>(dtype_size(issue.dtype)),
                     ", \"dtype\": \"", dtype_name(issue.dtype), "\""));
}

std::string Executor::queue_note(const Issue& issue, uint64_t sequence) const {
  return detail::concat(kind_name(issue.kind), " #", sequence, label_.empty() ? " on the world" : on_which());
}

void Executor::report_deadline(const Position& where) {
  std::string report = detail::concat("rank ", rank_, ": ", where.describe(), on_which(), " exceeded ",
                                      options_.timeout.count() / 1000.0, " s");
  // On a queue several communicators share, a stuck call holds back every other one's: a rank
  // of a peer may wait in one of those (issue #47 item 7), so the report names them.
  if (queue_->shared()) {
    const std::vector<std::string> behind = queue_->waiting();
    if (!behind.empty()) {
      report +=
          "; waiting behind it on this rank (one call queue for all communicators, MPI_THREAD_MULTIPLE "
          "not provided or RINGDP_MPI_THREAD=serialized): ";
      for (size_t i = 0; i < behind.size(); ++i) report += (i ? ", " : "") + behind[i];
    }
  }
  if (options_.timeout_raises) {
    // The ranks now disagree on where they are, and this one's requests may still be posted: no
    // later call could be trusted, so none runs.
    close("is broken: " + report);
    throw Error(report);
  }
  std::fprintf(stderr, "ringdp: %s; ending the job\n", report.c_str());
  abort_job(1);
}

}  // namespace ringdp::comm

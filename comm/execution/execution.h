// Folder comm/execution/: running the calls the front door described: this Executor, the call
// queue and its worker, planted faults. Below only the front door (comm/communicator.h).
//
// Execution: how one described collective runs, once the front door (comm/communicator.h) has
// checked it and chosen its algorithm. Numbers it, applies RINGDP_FAULT's plan, orders it behind
// earlier calls (comm/execution/call_queue.h), runs it with a deadline over its route's transport, and lets
// the watchers see it: the DETAIL check, the fault plan, the timeline and the step observer.
// With no watcher, a blocking call of the library's own collective on host tensors runs the
// library call in place (run_direct): one question decides it. Never calls back into the
// front door. Tested through the communicator: tests/mpi/ (collectives, async, errors, steps).
//
// Threading: a communicator is used from one thread at a time. Calls issued from several
// threads need the caller's own ordering (every rank must issue collectives in one order
// anyway); the queue's worker runs asynchronous calls, holding exec_mutex() while it does. The
// queue is this communicator's own, or the process's where MPI lacks MPI_THREAD_MULTIPLE
// (comm/execution/call_queue.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/algorithms/algorithm_choice.h"
#include "comm/algorithms/algorithms.h"
#include "comm/bootstrap/mpi_runtime.h"
#include "comm/comm_options.h"
#include "comm/execution/call_queue.h"
#include "comm/execution/fault.h"
#include "comm/position.h"
#include "comm/transport/envelope.h"
#include "comm/work.h"
#include "comm/world/routes.h"
#include "core/timeline.h"
#include "tensor/tensor.h"

namespace ringdp::comm {

class Departures;  // comm/world/departures.h
class Executor;

/// One collective as issued: what DETAIL compares across ranks and the watchdog names.
struct Issue {
  CollectiveKind kind;
  DType dtype = DType::float32;
  int64_t count = 0;
  Algorithm algorithm = Algorithm::native;
  ReduceOp op = ReduceOp::sum;
  int root = -1;
  Route route = Route::host;
  /// As the caller passed them: async, the CUDA stream (`algorithm` above is the resolved one).
  CollectiveOptions requested{};
  /// The uneven forms: a hash of the counts every rank passes alike (all_gather's), which DETAIL
  /// compares with the rest of the call; 0 for the even forms.
  uint64_t layout = 0;
  /// The uneven all_to_all: `count` (what this rank sends) differs between ranks by design, so
  /// DETAIL leaves it out and compares the counts pair by pair (check_pairwise_counts).
  bool per_rank_count = false;
  /// The tensor's shape as the caller passed it, for messages (Position::shape).
  ShapeNote shape{};
};

/// What a collective's body runs with.
struct Call {
  CollectiveContext ctx;
  Algorithm algorithm;
  Executor* executor;
  int64_t count_delta = 0;  ///< RINGDP_FAULT count: run with this many elements more (or fewer)
  std::chrono::milliseconds timeout;
  bool blocking_wait = false;
  CollectiveOptions requested;  ///< as the caller issued it: its CUDA stream, its ready event
  bool settled = false;
  Tensor staged[2];  ///< view()'s host copies of CUDA tensors, when the transport needs them

  /// Ends the device part of the collective, once: from here the caller's stream (or, with
  /// blocking_wait, the host) is ordered after it. No-op for host memory.
  void settle() {
    if (settled || !ctx.transport.device_memory()) return;
    settled = true;
    ctx.transport.end_collective(ctx.position.describe(), timeout, blocking_wait, requested.stream);
  }
  /// The tensor the transport works on: itself in device memory or on the host (no handle copy),
  /// else a host copy that this Call keeps (one per tensor of the collective).
  const Tensor& view(const Tensor& t);
  /// What the transport wrote into `host` (view()'s result) into `target`, on the caller's stream.
  void write_back(Tensor& target, const Tensor& host) const;
  /// The library's own collective (`--algo native`); a world of one has its identity ones.
  bool native() const { return algorithm == Algorithm::native; }
  /// The element count to run with: n, changed by an injected fault, kept within the tensor.
  int64_t effective(int64_t n) const { return std::clamp<int64_t>(n + count_delta, 0, n); }
  /// A context for another transport of the same collective (the hierarchical all-reduce's host
  /// and cross transports), with the same tag, op and deadline.
  CollectiveContext context_on(Transport& transport);
};

/// A collective's body, not owned, and the tensors it runs on, not copied: a blocking call runs
/// it on the caller's thread while the body and the caller's tensors are alive, so it needs no
/// std::function (a heap allocation per call) and no tensor handle copies (two atomic
/// reference-count operations each); only a queued call copies the body and the tensors into
/// one. The body's tensors are parameters, not captures, for that reason.
class BodyRef {
 public:
  template <typename F>
  BodyRef(const F& body, const Tensor& input, Tensor& output)
      : object_(&body),
        input_(&input),
        output_(&output),
        call_([](const void* object, Call& call, const Tensor& in, Tensor& out) {
          (*static_cast<const F*>(object))(call, in, out);
        }) {}
  void operator()(Call& call) const { call_(object_, call, *input_, *output_); }

 private:
  const void* object_;
  const Tensor* input_;
  Tensor* output_;
  void (*call_)(const void*, Call&, const Tensor&, Tensor&);
};

class Executor {
 public:
  Executor(Routes& routes, const CommOptions& options, int rank, int size, int tag_upper_bound);
  /// Waits for this communicator's queued calls (the queue outlives it when other communicators
  /// share it).
  ~Executor() {
    queue_->drain();
    // A forked child must not destroy the queue: its condition variables have waiters in the
    // parent (the worker), and destroying one of those waits for them forever.
    if (in_forked_child()) new std::shared_ptr<CallQueue>(std::move(queue_));
  }
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Numbers the collective, carries out RINGDP_FAULT's plan for it, and runs it in issue order.
  /// `body(call, input, output)` runs it; a queued call holds its own handles to the tensors.
  template <typename F>
  Work submit(const Issue& issue, const Tensor& input, Tensor& output, F body);
  /// A blocking call of the library's own collective on host tensors with no watcher: numbers it
  /// and runs `library_call` in place, without a Call, deadline or steps, which such a call never
  /// uses. False, having run nothing, when the queue is busy or something watches.
  template <typename F>
  bool run_direct(const Issue& issue, F&& library_call);

  /// A context on `transport` whose deadline (the collective timeout) starts now; `watched` false
  /// leaves the deadline alone (MPI's own blocking collectives never poll it).
  CollectiveContext armed(Transport& transport, DType dtype, int tag, bool watched = true);
  void set_step_observer(StepObserver observer);
  /// RINGDP_DEBUG=DETAIL is on: the bodies of the uneven all_to_all check their counts pairwise.
  bool checks_calls() const { return check_calls_ && size_ > 1; }
  /// DETAIL, the uneven all_to_all: ends the job when recv_counts[i] here differs from rank i's
  /// send_counts[this rank], naming both. Over the host transport, with the call's tag.
  void check_pairwise_counts(std::span<const int64_t> send_counts, std::span<const int64_t> recv_counts,
                             int tag);
  /// Collectives this rank finished before its first failure, or issued if none failed: what a
  /// rank that leaves tells its peers (comm/world/departures.h).
  uint64_t finished() const { return std::min(sequence_, first_failed_); }
  /// Where this rank is: the collective running or last run, its step (comm/world/departures.h reads it).
  const Position& position() const { return position_; }
  /// Throws, naming `what`, once close() has been called.
  void check_open(const char* what) const {
    if (closed_.load(std::memory_order_acquire)) throw_closed(what);
  }
  /// From now on every call fails at once, saying the communicator `state` ("has left the job
  /// (...)": what its collectives need, the shared windows, may be gone; "is broken: ...").
  void close(std::string state) {
    closed_why_ = std::move(state);
    closed_.store(true, std::memory_order_release);
  }
  /// Where a collective that fails here is told to the peers (comm/world/departures.h); not owned.
  void set_departures(Departures* departures) { departures_ = departures; }
  /// Sends and receives are numbered apart: they involve some ranks only.
  uint64_t last_p2p_sequence() const { return p2p_sequence_ - 1; }
  CallQueue& queue() { return *queue_; }
  /// Which communicator this is, for reports that may concern several: "group #1 of world ranks
  /// 0, 1"; empty for the world.
  void set_label(std::string label) { label_ = std::move(label); }
  /// " on group #1 of world ranks 0, 1"; "" for the world.
  std::string on_which() const { return label_.empty() ? std::string() : " on " + label_; }
  Transport& host() { return routes_.host(); }
  const CommOptions& options() const { return options_; }
  /// A wait passed the collective timeout: reports where and ends the job, or with
  /// CommOptions::timeout_raises closes this executor and throws the report.
  [[noreturn]] void report_deadline(const Position& where);

 private:
  void execute(const Issue& issue, uint64_t sequence, const FaultAction& fault, BodyRef body);
  /// RINGDP_DEBUG=DETAIL: ends the job, naming both calls, when another rank issued another one.
  void check_same_call(const Issue& issue, uint64_t sequence, int64_t count, int tag);
  /// Publishes the call where peers on this host can compare it (SharedSlots::announce).
  void announce(uint64_t sequence, int tag);
  /// The same for a call on the direct path, out of line: only jobs of several ranks on one host
  /// pay for it (measured in docs/benchmarks.md).
  void announce_direct(const Issue& issue);
  /// What a call waiting behind another communicator's on a shared queue is (CallQueue::waiting).
  std::string queue_note(const Issue& issue, uint64_t sequence) const;
  /// The timeline event of one collective that began at `began` and ends now.
  void record_collective(const Issue& issue, uint64_t sequence, timeline::Clock::time_point began);
  /// Anything that must see each collective: asked once per call, under the execution lock.
  bool watched() const { return watchers_ || timeline::enabled(); }
  [[noreturn]] void kill(const Issue& issue, uint64_t sequence);
  [[noreturn]] void throw_closed(const char* what) const;
  /// A collective threw here: closes this executor and tells the peers (set_departures).
  void fail_collective(const std::string& why);
  /// `what`, then what this rank passed to the running collective: "; rank 2 passed 1000 x float32
  /// [10, 100] to all_reduce #1".
  std::string with_what_was_passed(const std::string& what) const;

  Routes& routes_;
  const CommOptions& options_;
  /// RINGDP_FAULT's plan, read once (comm/execution/fault.h): empty in any run that injects nothing.
  const FaultPlan& faults_ = FaultPlan::from_environment();
  int rank_ = 0, size_ = 1;
  bool trace_ = false;
  bool check_calls_ = false;  // RINGDP_DEBUG=DETAIL
  bool watchers_ = false;  // a fault plan, DETAIL or a step observer (the timeline is asked apart)
  std::atomic<bool> closed_{false};  // close() was called: read by every call, so not the string
  std::string closed_why_;
  uint64_t first_failed_ = UINT64_MAX;  // the sequence number of the first collective that threw
  uint64_t sequence_ = 0;  // collectives issued: every rank issues each one, so it is part of their tags
  uint64_t p2p_sequence_ = 0;  // sends and receives: between some ranks only, so numbered apart
  Departures* departures_ = nullptr;
  SharedSlots* host_slots_ = nullptr;  // the host transport's, where all ranks share one host
  int sequence_bits_ =
      16;  // of the sequence in a tag: what fits under MPI_TAG_UB (comm/transport/envelope.h)
  Position position_;
  StepObserver observer_;
  std::vector<Request> requests_;
  std::shared_ptr<CallQueue> queue_ = CallQueue::for_communicator();  // comm/execution/call_queue.h
  std::string label_;  // set_label()
};

template <typename F>
Work Executor::submit(const Issue& issue, const Tensor& input, Tensor& output, F body) {
  check_open(kind_name(issue.kind));
  // Point-to-point calls involve some ranks only: counting them with the collectives would put
  // the ranks that took part one collective ahead of the others in every later tag.
  const bool p2p = issue.kind == CollectiveKind::send || issue.kind == CollectiveKind::recv;
  const uint64_t sequence = p2p ? p2p_sequence_++ : sequence_++;
  // RINGDP_FAULT numbers collectives only (see comm/execution/fault.h).
  const FaultAction fault = p2p || faults_.empty() ? FaultAction{} : faults_.action(rank_, sequence);
  if (fault.kill) kill(issue, sequence);
  if (fault.skip) return issue.requested.async ? Work::completed() : Work::returned();
  auto note = [this, &issue, sequence] { return queue_note(issue, sequence); };
  if (!issue.requested.async &&
      queue_->run_inline([&] { execute(issue, sequence, fault, BodyRef(body, input, output)); }, note))
    return Work::returned();
  return queue_->run(
      [this, issue, sequence, fault, input = input, output = output, body = std::move(body)]() mutable {
        execute(issue, sequence, fault, BodyRef(body, input, output));
      },
      // A note only where the queue is shared: a std::function of this lambda is a heap allocation.
      issue.requested.async,
      queue_->shared() ? std::function<std::string()>(note) : std::function<std::string()>());
}

template <typename F>
bool Executor::run_direct(const Issue& issue, F&& library_call) {
  if (issue.algorithm != Algorithm::native || issue.route != Route::host || issue.requested.async ||
      closed_.load(std::memory_order_acquire))
    return false;
  bool ran = false;
  // Watchers change through the queue, so they are read under the execution lock.
  queue_->run_inline(
      [&] {
        if (watched()) return;
        ran = true;
        position_ =
            Position{.kind = issue.kind, .sequence = sequence_++, .count = issue.count, .dtype = issue.dtype};
        if (host_slots_) announce_direct(issue);
        library_call();
      },
      [this, &issue] { return queue_note(issue, sequence_); });
  return ran;
}

}  // namespace ringdp::comm

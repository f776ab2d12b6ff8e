// Implements comm/communicator.h (the contract is documented there). Tested by tests/mpi/ (collectives,
// async, errors) and tests/cli/bench.sh.
#include "comm/communicator.h"

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include "comm/algorithms.h"
#include "comm/envelope.h"
#include "comm/fingerprint.h"
#include "comm/mpi_cuda_transport.h"
#include "comm/mpi_runtime.h"
#include "comm/mpi_transport.h"
#include "comm/nccl_transport.h"
#include "comm/shared_slots.h"
#include "config.h"
#include "kernels/device_memory.h"
#include "tensor/ops.h"

namespace ringdp::comm {

namespace {

long long env_number(const char* name, long long fallback) {
  const char* value = std::getenv(name);
  if (!value || !*value) return fallback;
  char* end = nullptr;
  const long long parsed = std::strtoll(value, &end, 10);
  RINGDP_CHECK(end && *end == '\0' && parsed >= 0, "environment variable ", name, "='", value,
               "' is not a non-negative integer");
  return parsed;
}

void check_op(ReduceOp op, DType dtype) {
  RINGDP_CHECK(op != ReduceOp::avg || is_floating(dtype), "reduce op avg is not defined for ",
               dtype_name(dtype), " tensors; use sum and divide, or a floating-point dtype");
}

void check_root(int root, int size, const char* what) {
  RINGDP_CHECK(root >= 0 && root < size, what, ": root ", root, " out of range for ", size,
               " ranks (expected 0..", size - 1, ")");
}

void check_pair(const Tensor& input, const Tensor& output, const char* what) {
  RINGDP_CHECK(input.defined() && output.defined(), what, ": undefined tensor");
  RINGDP_CHECK(input.dtype() == output.dtype(), what, ": input dtype ", dtype_name(input.dtype()),
               " differs from output dtype ", dtype_name(output.dtype()));
  RINGDP_CHECK(input.device() == output.device(), what, ": input on ", input.device().str(), ", output on ",
               output.device().str(), "; both must be on one device");
}

[[noreturn, gnu::cold, gnu::noinline]] void fail_overlap(const char* what, size_t in_bytes,
                                                         std::ptrdiff_t out_at, size_t out_bytes) {
  RINGDP_FAIL(what, ": the output overlaps the input without being it (input bytes [0, ", in_bytes,
              "), output bytes [", out_at, ", ", out_at + static_cast<std::ptrdiff_t>(out_bytes),
              ") of the same memory); pass one tensor for in place, or two that do not overlap");
}

// Input and output may be one buffer (in place: the same bytes, or for all_gather and
// reduce_scatter this rank's chunk of the larger one, at `in_place_offset` bytes into it) or two
// that do not overlap. Anything in between is refused: the algorithms read one while writing the
// other through restrict pointers, and MPI forbids overlapping send and receive buffers.
void check_overlap(const Tensor& input, const Tensor& output, const char* what, const Tensor& larger,
                   const Tensor& chunk, size_t in_place_offset) {
  const auto* in = static_cast<const char*>(input.data_ptr());
  const auto* out = static_cast<const char*>(output.data_ptr());
  if (input.nbytes() == 0 || output.nbytes() == 0) return;
  if (in + input.nbytes() <= out || out + output.nbytes() <= in) return;  // disjoint
  const auto* base = static_cast<const char*>(larger.data_ptr());
  if (static_cast<const char*>(chunk.data_ptr()) == base + in_place_offset) return;  // in place
  fail_overlap(what, input.nbytes(), out - in, output.nbytes());
}

// Where a collective works on host copies (host tensors; CUDA tensors given to MPI's own
// collectives without CUDA-aware MPI; user send/recv), the copy is made here. to() returns the
// tensor itself when it is already on the host.
Tensor host_view(const Tensor& t) { return t.to(Device::cpu()); }

// avg's division of a result the collective wrote through `out` (a handle the body may not own).
void scale_result(const Tensor& out, double alpha) {
  Tensor handle = out;
  ops::scale_(handle, alpha);
}
void write_back(Tensor& target, const Tensor& host) {
  if (!target.is_same(host)) target.copy_from(host);
}

}  // namespace

struct Communicator::Call {
  CollectiveContext ctx;
  Algorithm algorithm;
  int64_t count_delta = 0;  ///< RINGDP_FAULT count: run with this many elements more (or fewer)
  std::chrono::milliseconds timeout;
  bool blocking_wait = false;
  bool settled = false;
  Tensor staged[2];  ///< view()'s host copies of CUDA tensors, when the transport needs them

  /// Ends the device part of the collective, once: from here the caller's stream (or, with
  /// blocking_wait, the host) is ordered after it. No-op for host memory.
  void settle() {
    if (settled || !ctx.transport.device_memory()) return;
    settled = true;
    ctx.transport.end_collective(ctx.position.describe(), timeout, blocking_wait);
  }

  /// The tensor the transport works on: itself in device memory or on the host (no handle copy,
  /// issue #20), else a host copy that this Call keeps (one per tensor of the collective).
  const Tensor& view(const Tensor& t) {
    if (ctx.transport.device_memory() || t.device().is_cpu()) return t;
    Tensor& slot = staged[staged[0].defined() ? 1 : 0];
    slot = host_view(t);
    return slot;
  }
  /// The library's own collective (`--algo native`); a world of one has its identity ones.
  bool native() const { return algorithm == Algorithm::native; }
  /// The element count to run with: n, changed by an injected fault, kept within the tensor.
  int64_t effective(int64_t n) const { return std::clamp<int64_t>(n + count_delta, 0, n); }
};

std::shared_ptr<Communicator> Communicator::init(CommOptions options) {
  // The environment overrides the caller: it is how a user changes a deadline without a rebuild.
  if (std::getenv("RINGDP_TIMEOUT")) options.timeout = std::chrono::seconds(env_number("RINGDP_TIMEOUT", 0));
  if (std::getenv("RINGDP_TIMEOUT_MS"))
    options.timeout = std::chrono::milliseconds(env_number("RINGDP_TIMEOUT_MS", 0));
  RINGDP_CHECK(options.timeout.count() > 0, "the collective timeout must be positive");
  options.segment_bytes = env_number("RINGDP_SEGMENT_BYTES", options.segment_bytes);
  options.recursive_doubling_max_bytes =
      env_number("RINGDP_RD_MAX_BYTES", options.recursive_doubling_max_bytes);
  options.chain_broadcast_min_bytes = env_number("RINGDP_CHAIN_MIN_BYTES", options.chain_broadcast_min_bytes);
  options.rabenseifner_max_bytes =
      env_number("RINGDP_RABENSEIFNER_MAX_BYTES", options.rabenseifner_max_bytes);
  options.shared_memory_max_bytes = env_number("RINGDP_SHM_MAX_BYTES", options.shared_memory_max_bytes);
  options.shared_memory_scatter_min_bytes =
      env_number("RINGDP_SHM_SCATTER_MIN_BYTES", options.shared_memory_scatter_min_bytes);
  options.shared_memory_slot_bytes = env_number("RINGDP_SHM_SLOT_BYTES", options.shared_memory_slot_bytes);
  RINGDP_CHECK(options.shared_memory_slot_bytes >= 64 && options.shared_memory_slot_bytes % 64 == 0,
               "shared-memory slot of ", options.shared_memory_slot_bytes,
               " bytes (RINGDP_SHM_SLOT_BYTES): expected a positive multiple of 64");
  if (std::getenv("RINGDP_BLOCKING_WAIT")) options.blocking_wait = env_number("RINGDP_BLOCKING_WAIT", 0) != 0;
  if (const char* backend = std::getenv("RINGDP_BACKEND"); backend && *backend) options.backend = backend;
  RINGDP_CHECK(options.backend == "auto" || options.backend == "mpi" || options.backend == "nccl",
               "unknown backend '", options.backend, "'; expected auto, mpi or nccl");
  RINGDP_CHECK(options.backend != "nccl" || RINGDP_HAVE_NCCL,
               "backend nccl: ringdp was built without NCCL "
               "(configure with -Dnccl=enabled on a machine with CUDA and NCCL)");
  FaultPlan::from_environment();  // a malformed RINGDP_FAULT is an error now, before any collective
  const bool under_launcher = launched_by_mpi_launcher() && !options.force_local;
#if RINGDP_HAVE_MPI
  if (under_launcher) {
    mpi_ensure_initialized(options.mpi_thread == MpiThread::single);
    auto transport = std::make_unique<MpiTransport>(MPI_COMM_WORLD);
    MPI_Comm node;
    RINGDP_MPI_CHECK(MPI_Comm_split_type(transport->comm(), MPI_COMM_TYPE_SHARED, transport->rank(), MPI_INFO_NULL,
                                  &node));
    int local_rank = 0, local_size = 1;
    RINGDP_MPI_CHECK(MPI_Comm_rank(node, &local_rank));
    RINGDP_MPI_CHECK(MPI_Comm_size(node, &local_size));
    // Hosts for the hierarchical all-reduce: the nodes, or with RINGDP_RANKS_PER_HOST=k every k
    // consecutive ranks (to try the algorithm on one machine; GPUs still follow the real node).
    MPI_Comm host = MPI_COMM_NULL, cross = MPI_COMM_NULL;
    const int64_t per_host = env_number("RINGDP_RANKS_PER_HOST", 0);
    RINGDP_CHECK(per_host >= 0, "RINGDP_RANKS_PER_HOST=", per_host, ": expected a positive number of ranks");
    if (per_host > 0)
      RINGDP_MPI_CHECK(MPI_Comm_split(transport->comm(), static_cast<int>(transport->rank() / per_host),
                               transport->rank(), &host));
    else
      RINGDP_MPI_CHECK(MPI_Comm_dup(node, &host));
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const bool oversubscribed = static_cast<unsigned>(local_size) > cores;
    int host_rank = 0, host_size = 1;
    RINGDP_MPI_CHECK(MPI_Comm_rank(host, &host_rank));
    RINGDP_MPI_CHECK(MPI_Comm_size(host, &host_size));
    RINGDP_MPI_CHECK(MPI_Comm_split(transport->comm(), host_rank, transport->rank(), &cross));
    int hosts = host_rank == 0 ? 1 : 0, sizes[2] = {-host_size, host_size};
    RINGDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &hosts, 1, MPI_INT, MPI_SUM, transport->comm()));
    RINGDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, transport->comm()));
    if (options.segment_bytes == 0) {
      // Ranks that share cores progress only while scheduled: small segments keep each time
      // slice useful. Ranks with a core each do better with fewer, larger messages.
      options.segment_bytes = oversubscribed ? 64 * 1024 : 1024 * 1024;
    }
    // Open MPI yields inside its own progress when told (mpi_yield_when_idle, which the scripts
    // set), and a second yield of ours made small all-reduces on 4 ranks over 2 cores 2-4x
    // slower; MPICH's ch4 device has no such setting, so there ringdp yields (RINGDP_YIELD=0/1
    // overrides either way; docs/benchmarks.md, "MPICH").
#if defined(MPICH_VERSION)
    const bool mpi_yields = false;
#else
    const bool mpi_yields = true;
#endif
    const bool yield = env_number("RINGDP_YIELD", oversubscribed && !mpi_yields ? 1 : 0) != 0;
    // What shapes messages or picks algorithms must be the same on every rank, yet comes from each
    // rank's environment and node (a sender's 1 MiB segment into a receiver's 64 KiB receive fails
    // every ring): every rank takes the minimum over ranks.
    uint64_t agreed[7] = {options.segment_bytes,
                          options.recursive_doubling_max_bytes,
                          options.chain_broadcast_min_bytes,
                          options.rabenseifner_max_bytes,
                          options.shared_memory_max_bytes,
                          options.shared_memory_scatter_min_bytes,
                          options.shared_memory_slot_bytes};
    RINGDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, agreed, 7, MPI_UINT64_T, MPI_MIN, transport->comm()));
    options.segment_bytes = agreed[0];
    options.recursive_doubling_max_bytes = agreed[1];
    options.chain_broadcast_min_bytes = agreed[2];
    options.rabenseifner_max_bytes = agreed[3];
    options.shared_memory_max_bytes = agreed[4];
    options.shared_memory_scatter_min_bytes = agreed[5];
    options.shared_memory_slot_bytes = agreed[6];  // sets every shared-memory round's length
    // Every rank on one host (each sees all in its node): the shared-memory slots. Collective
    // over `node`, and every rank takes the same branch.
    if (local_size == transport->size())
      transport->enable_shared_slots(node, options.shared_memory_slot_bytes, oversubscribed);
    RINGDP_MPI_CHECK(MPI_Comm_free(&node));
    transport->set_yield_when_idle(yield);
    std::shared_ptr<Communicator> comm(new Communicator(std::move(transport), options));
    comm->backend_ = "mpi";
    comm->local_rank_ = local_rank;
    comm->local_size_ = local_size;
    comm->decide_device();
    auto host_transport = std::make_unique<MpiTransport>(host);
    auto cross_transport = std::make_unique<MpiTransport>(cross);
    host_transport->set_yield_when_idle(yield);
    cross_transport->set_yield_when_idle(yield);
    comm->host_transport_ = std::move(host_transport);
    comm->cross_transport_ = std::move(cross_transport);
    comm->hosts_ = hosts;
    comm->uniform_hosts_ = -sizes[0] == sizes[1];
    RINGDP_MPI_CHECK(MPI_Comm_free(&host));
    RINGDP_MPI_CHECK(MPI_Comm_free(&cross));
    return comm;
  }
#else
  RINGDP_CHECK(!under_launcher || launcher_world_size() == 1,
               "ringdp was built without MPI but was "
               "started by mpirun with ",
               launcher_world_size(), " ranks; rebuild with -Dmpi=enabled");
#endif
  if (options.segment_bytes == 0) options.segment_bytes = 1024 * 1024;
  return std::shared_ptr<Communicator>(new Communicator(std::make_unique<LocalTransport>(), options));
}

Communicator::Communicator(std::unique_ptr<Transport> transport, CommOptions options)
    : transport_(std::move(transport)), options_(options) {
  rank_ = transport_->rank();
  size_ = transport_->size();
  nccl_backend_ = options_.backend == "nccl";
  auto_backend_ = options_.backend == "auto";
  shared_slots_ = transport_->shared_slots();
  sequence_bits_ = sequence_bits_for(transport_->tag_upper_bound());
  const char* trace = std::getenv("RINGDP_TRACE");
  trace_ = trace && std::strcmp(trace, "0") != 0 && *trace;
  const char* debug = std::getenv("RINGDP_DEBUG");
  check_calls_ = debug && std::strcmp(debug, "DETAIL") == 0;
  decide_device();
  timeline::start_from_environment(rank_);
  if (!mpi_allows_worker_thread()) queue_.set_caller_thread_only();
}

Communicator::~Communicator() = default;

namespace {
// A set of algorithms as bits: resolve() runs once per collective, and a bit test costs a few
// instructions where a walk over an initializer_list cost 50 (issue #20).
constexpr uint32_t bits(std::initializer_list<Algorithm> algorithms) {
  uint32_t set = 0;
  for (Algorithm a : algorithms) set |= 1u << static_cast<unsigned>(a);
  return set;
}

[[noreturn]] void fail_unavailable(CollectiveKind kind, Algorithm requested, uint32_t available) {
  std::string names;
  for (unsigned a = 0; a < 32; ++a)
    if (available >> a & 1u)
      names += std::string(names.empty() ? "" : ", ") + algorithm_name(static_cast<Algorithm>(a));
  RINGDP_FAIL(kind_name(kind), " has no ", algorithm_name(requested), " algorithm; available: ", names,
              ", auto");
}
}  // namespace

Algorithm Communicator::resolve(CollectiveKind kind, size_t bytes, Algorithm requested) const {
  auto pick = [&](uint32_t available, Algorithm fallback) {
    if (requested == Algorithm::automatic) return fallback;
    if (available >> static_cast<unsigned>(requested) & 1u) return requested;
    fail_unavailable(kind, requested, available);
  };
  // Every collective has the library's own: no table to consult (issue #20).
  if (requested == Algorithm::native) return requested;
  switch (kind) {
    case CollectiveKind::all_reduce:
      // Ranks on several hosts, some sharing one: the hierarchical scheme for all but small
      // messages (recursive doubling's log2 N latency wins those). Host tensors only, for now.
      if (requested == Algorithm::automatic && spans_hosts() && bytes > options_.recursive_doubling_max_bytes)
        return Algorithm::hierarchical;
      // Shared memory needs every rank on one host; a world of one has nothing to share.
      RINGDP_CHECK(requested != Algorithm::shared_memory || size_ == 1 || shared_slots_,
                   "all_reduce: the shared_memory algorithm needs every rank on one host and MPI shared "
                   "windows in the unified memory model; these ",
                   size_, " ranks run on ", hosts_, " hosts");
      return pick(bits({Algorithm::ring, Algorithm::recursive_doubling, Algorithm::rabenseifner,
                        Algorithm::native, Algorithm::hierarchical, Algorithm::shared_memory}),
                  shared_slots_ && bytes <= options_.shared_memory_max_bytes ? Algorithm::shared_memory
                  : bytes <= options_.recursive_doubling_max_bytes           ? Algorithm::recursive_doubling
                  : size_ >= 4 && bytes <= options_.rabenseifner_max_bytes   ? Algorithm::rabenseifner
                                                                             : Algorithm::ring);
    case CollectiveKind::reduce: return pick(bits({Algorithm::tree, Algorithm::native}), Algorithm::tree);
    case CollectiveKind::broadcast:
      // `ring` names the pipelined chain: the ring with its last link missing.
      return pick(bits({Algorithm::tree, Algorithm::ring, Algorithm::native}),
                  bytes < options_.chain_broadcast_min_bytes ? Algorithm::tree : Algorithm::ring);
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
      return pick(bits({Algorithm::ring, Algorithm::native}), Algorithm::ring);
    case CollectiveKind::barrier:
      // The dissemination barrier is our only one; `tree` and `ring` name nothing here.
      return pick(bits({Algorithm::recursive_doubling, Algorithm::native}), Algorithm::recursive_doubling);
    case CollectiveKind::send:
    case CollectiveKind::recv: return Algorithm::native;
  }
  return requested;
}

template <typename F>
Work Communicator::submit(const Issue& issue, const Tensor& input, Tensor& output, F body) {
  // Point-to-point calls involve some ranks only: counting them with the collectives would put
  // the ranks that took part one collective ahead of the others in every later tag.
  const bool p2p = issue.kind == CollectiveKind::send || issue.kind == CollectiveKind::recv;
  const uint64_t sequence = p2p ? p2p_sequence_++ : sequence_++;
  // RINGDP_FAULT numbers collectives only (see comm/fault.h).
  const FaultAction fault = p2p || faults_.empty() ? FaultAction{} : faults_.action(rank_, sequence);
  if (fault.kill) {
    std::fprintf(stderr, "ringdp: rank %d: RINGDP_FAULT kill at %s #%llu\n", rank_, kind_name(issue.kind),
                 static_cast<unsigned long long>(sequence));
    std::raise(SIGKILL);
  }
  if (fault.skip) return issue.async ? Work::completed() : Work::returned();
  if (!issue.async &&
      queue_.run_inline([&] { execute(issue, sequence, fault, BodyRef(body, input, output)); }))
    return Work::returned();
  return queue_.run(
      [this, issue, sequence, fault, input = input, output = output, body = std::move(body)]() mutable {
        execute(issue, sequence, fault, BodyRef(body, input, output));
      },
      issue.async);
}

template <typename F>
bool Communicator::run_direct(const Issue& issue, F&& library_call) {
  if (issue.algorithm != Algorithm::native || issue.route != Route::host || issue.async || !faults_.empty() ||
      check_calls_ || timeline::enabled())
    return false;
  bool ran = false;
  // The observer is set through the queue, so it is read under the execution lock.
  queue_.run_inline([&] {
    if (observer_) return;
    ran = true;
    position_ =
        Position{.kind = issue.kind, .sequence = sequence_++, .count = issue.count, .dtype = issue.dtype};
    library_call();
  });
  return ran;
}

void Communicator::execute(const Issue& issue, uint64_t sequence, const FaultAction& fault, BodyRef body) {
  if (fault.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(fault.delay_ms));
  position_ = Position{.kind = issue.kind,
                       .sequence = sequence,
                       .algorithm = issue.algorithm,
                       .count = issue.count,
                       .dtype = issue.dtype};
  Transport& routed = issue.route == Route::host ? *transport_ : transport_for(issue.route);
  // The library's own collectives may live elsewhere: MPI without CUDA support takes host copies.
  Transport& transport = issue.algorithm == Algorithm::native ? routed.native_transport() : routed;
  Call call{
      // MPI's own collectives block outside the watchdog (docs/errors.md): no clock read for them.
      .ctx = armed(transport, issue.dtype, encode_tag(issue.kind, issue.dtype, sequence, sequence_bits_),
                   issue.algorithm != Algorithm::native || transport.device_memory()),
      .algorithm = issue.algorithm,
      .count_delta = fault.count_delta,
      .timeout = options_.timeout,
      .blocking_wait = options_.blocking_wait,
      .settled = false,
      .staged = {}};
  call.ctx.corrupt_next_receive = fault.corrupt;
  transport.begin_collective();
  if (check_calls_ && size_ > 1 && issue.kind != CollectiveKind::send && issue.kind != CollectiveKind::recv)
    check_same_call(issue, sequence, call.effective(issue.count), call.ctx.tag);
  timeline::Clock::time_point began{};
  if (timeline::enabled()) began = timeline::Clock::now();
  if (!transport.device_memory()) {
    body(call);
    call.ctx.end_steps();
    if (began != timeline::Clock::time_point{}) record_collective(issue, sequence, began);
    return;
  }
  try {
    body(call);
    call.ctx.end_steps();
    call.settle();
    if (began != timeline::Clock::time_point{}) record_collective(issue, sequence, began);
  } catch (const Error& e) {
    // A CUDA or NCCL error names the call that failed; say which collective and step it was in.
    throw Error(detail::concat(position_.describe(), " on rank ", rank_, ": ", e.what()));
  }
}

void Communicator::check_same_call(const Issue& issue, uint64_t sequence, int64_t count, int tag) {
  const Fingerprint mine{static_cast<int64_t>(issue.kind),
                         static_cast<int64_t>(issue.op),
                         static_cast<int64_t>(issue.dtype),
                         count,
                         issue.root,
                         static_cast<int64_t>(sequence)};
  // A host-side check: its exchange runs over the host transport whatever the tensors' device.
  CollectiveContext host = armed(*transport_, issue.dtype, tag);
  const std::string mismatch = compare_fingerprints(host, mine);
  if (!mismatch.empty()) {
    std::fprintf(stderr, "ringdp: rank %d: %s; ending the job\n", rank_, mismatch.c_str());
    abort_job(1);
  }
}

void Communicator::check_device(const Tensor& t) const {
  const Device mine = device();
  RINGDP_CHECK(t.device() == mine, "rank ", rank_, " (local rank ", local_rank_, ") got a tensor on ",
               t.device().str(), " but communicates on ", mine.str(),
               ": put its tensors on Communicator::device() (each rank uses GPU local_rank % visible GPUs)");
}

Communicator::Route Communicator::route_for(const Tensor& t) const {
  if (nccl_backend_) {
    RINGDP_CHECK(RINGDP_HAVE_NCCL,
                 "--backend nccl: ringdp was built without NCCL (configure with -Dnccl=enabled "
                 "on a machine with CUDA and NCCL)");
    RINGDP_CHECK(!t.defined() || t.device().is_cuda(), "--backend nccl needs CUDA tensors; got a tensor on ",
                 t.device().str(), " (use --backend mpi or auto for host tensors)");
    if (t.defined()) check_device(t);
    return t.defined() ? Route::nccl : Route::host;
  }
  if (!t.defined() || !t.device().is_cuda()) return Route::host;
  check_device(t);
  return RINGDP_HAVE_NCCL && auto_backend_ ? Route::nccl : Route::mpi_cuda;
}

void Communicator::decide_device() {
  const int gpus = kernels::cuda_device_count();
  device_ = gpus > 0 ? Device::cuda(local_rank_ % gpus) : Device::cpu();
}

Transport& Communicator::transport_for(Route route) {
  switch (route) {
    case Route::host: return *transport_;
    case Route::nccl:
#if RINGDP_HAVE_NCCL
      if (!nccl_transport_) {
        Transport& host = *transport_;
        nccl_transport_ = std::make_unique<NcclTransport>(
            rank_, size_, device().index,
            [&host](void* id, size_t bytes) { host.bootstrap_broadcast(id, bytes); }, options_.timeout);
      }
      return *nccl_transport_;
#else
      RINGDP_FAIL("the NCCL transport is not built in");
#endif
    case Route::mpi_cuda:
#if RINGDP_HAVE_CUDA
      if (!mpi_cuda_transport_) {
        const auto path = transport_->reads_device_memory() ? MpiCudaTransport::Path::cuda_aware
                                                            : MpiCudaTransport::Path::staged;
        mpi_cuda_transport_ = std::make_unique<MpiCudaTransport>(*transport_, device().index, path);
        const char* debug = std::getenv("RINGDP_DEBUG");
        if (debug && rank_ == 0 && (std::strcmp(debug, "INFO") == 0 || std::strcmp(debug, "DETAIL") == 0))
          std::fprintf(stderr, "ringdp: CUDA tensors over MPI: %s\n", path_name(path));
      }
      return *mpi_cuda_transport_;
#else
      RINGDP_FAIL("CUDA tensors need a build with CUDA");
#endif
  }
  RINGDP_FAIL("unknown route");
}

void Communicator::on_deadline() { report_deadline(position_); }

void Communicator::report_deadline(const Position& where) {
  std::fprintf(stderr, "ringdp: rank %d: %s exceeded %.3g s; ending the job\n", rank_,
               where.describe().c_str(), options_.timeout.count() / 1000.0);
  abort_job(1);
}

// --- collectives ----------------------------------------------------------------------------

Work Communicator::all_reduce(Tensor& tensor, ReduceOp op, CollectiveOptions opts) {
  return all_reduce(tensor, tensor, op, opts);
}

Work Communicator::all_reduce(const Tensor& input, Tensor& output, ReduceOp op, CollectiveOptions opts) {
  check_pair(input, output, "all_reduce");
  check_overlap(input, output, "all_reduce", input, output, 0);
  RINGDP_CHECK(input.numel() == output.numel(), "all_reduce: input has ", input.numel(), " elements, output ",
               output.numel());
  check_op(op, input.dtype());
  const Route route = route_for(input);
  Algorithm algorithm = resolve(CollectiveKind::all_reduce, input.nbytes(), opts.algorithm);
  // Rabenseifner's and shared memory's picks were measured on host tensors only; CUDA tensors
  // keep the ring and recursive doubling.
  if (algorithm == Algorithm::rabenseifner && opts.algorithm == Algorithm::automatic && route != Route::host)
    algorithm = Algorithm::ring;
  if (algorithm == Algorithm::shared_memory && route != Route::host) {
    RINGDP_CHECK(opts.algorithm != Algorithm::shared_memory,
                 "all_reduce: the shared_memory algorithm runs on host tensors; got a tensor on ",
                 input.device().str(), " (use ring, recursive_doubling or native)");
    algorithm = input.nbytes() <= options_.recursive_doubling_max_bytes ? Algorithm::recursive_doubling
                                                                        : Algorithm::ring;
  }
  if (algorithm == Algorithm::hierarchical && route != Route::host) {
    RINGDP_CHECK(
        opts.algorithm != Algorithm::hierarchical,
        "all_reduce: the hierarchical algorithm runs on host tensors (over MPI) for now; got a tensor on ",
        input.device().str(), " (use ring, recursive_doubling or native)");
    algorithm = Algorithm::ring;
  }
  const Issue issue{.kind = CollectiveKind::all_reduce,
                    .dtype = input.dtype(),
                    .count = input.numel(),
                    .algorithm = algorithm,
                    .op = op,
                    .route = route,
                    .async = opts.async};
  if (run_direct(issue, [&] {
        transport_->native_all_reduce(input.data_ptr(), output.data_ptr(), input.numel(), input.dtype(), op);
        if (op == ReduceOp::avg) scale_result(output, 1.0 / size_);
      }))
    return Work::returned();
  return submit(issue, input, output, [this, op](Call& call, const Tensor& input, Tensor& output) {
    const Tensor& in = call.view(input);
    const Tensor& out = output.is_same(input) ? in : call.view(output);
    call.ctx.op = op == ReduceOp::avg ? ReduceOp::sum : op;
    const int64_t n = call.effective(in.numel());
    Transport& transport = call.ctx.transport;
    // The ring and Rabenseifner divide as each part completes (CollectiveContext::scale); on
    // device memory, and for the others, the division is a pass of its own after the collective.
    const bool divides_as_it_goes =
        op == ReduceOp::avg && size_ > 1 && !transport.device_memory() &&
        (call.algorithm == Algorithm::ring || call.algorithm == Algorithm::rabenseifner) && n == in.numel();
    if (divides_as_it_goes) call.ctx.scale = 1.0 / size_;
    if (call.native()) {
      transport.native_all_reduce(in.data_ptr(), out.data_ptr(), n, in.dtype(), op);
    } else if (call.algorithm == Algorithm::recursive_doubling) {
      transport.copy(out.data_ptr(), in.data_ptr(), in.nbytes());
      all_reduce_recursive_doubling(call.ctx, out.data_ptr(), n);
    } else if (call.algorithm == Algorithm::shared_memory) {
      if (size_ == 1 || n < in.numel()) transport.copy(out.data_ptr(), in.data_ptr(), in.nbytes());
      if (size_ > 1)
        all_reduce_shared(call.ctx, *transport.shared_slots(), in.data_ptr(), out.data_ptr(), n,
                          options_.shared_memory_scatter_min_bytes);
    } else if (call.algorithm == Algorithm::rabenseifner) {
      transport.copy(out.data_ptr(), in.data_ptr(), in.nbytes());
      all_reduce_rabenseifner(call.ctx, out.data_ptr(), n);
    } else if (call.algorithm == Algorithm::hierarchical) {
      transport.copy(out.data_ptr(), in.data_ptr(), in.nbytes());
      run_hierarchical(call, out.data_ptr(), n);
    } else {
      if (n < in.numel())
        transport.copy(out.data_ptr(), in.data_ptr(), in.nbytes());  // an injected count fault
      all_reduce_ring(call.ctx, in.data_ptr(), out.data_ptr(), n);
    }
    call.ctx.end_steps();  // the observer sees the sum, unless the algorithm divided as it went
    call.settle();
    if (op == ReduceOp::avg && !divides_as_it_goes) scale_result(out, 1.0 / size_);
    write_back(output, out);
  });
}

CollectiveContext Communicator::armed(Transport& transport, DType dtype, int tag, bool watched) {
  if (watched) {
    if (!transport.has_expiry_handler())
      transport.set_deadline(Transport::Clock::time_point::max(), [this] { on_deadline(); });
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

void Communicator::set_step_observer(StepObserver observer) {
  // Read by the worker as each collective is armed: wait for those already issued.
  queue_.run([this, observer = std::move(observer)]() mutable { observer_ = std::move(observer); }, false);
}

void Communicator::record_collective(const Issue& issue, uint64_t sequence,
                                     timeline::Clock::time_point began) {
  timeline::complete(
      "collective",
      detail::concat(kind_name(issue.kind), " #", sequence, " ", algorithm_name(issue.algorithm)), began,
      timeline::Clock::now(), timeline::thread_row(),
      detail::concat("\"count\": ", issue.count,
                     ", \"bytes\": ", issue.count * static_cast<int64_t>(dtype_size(issue.dtype)),
                     ", \"dtype\": \"", dtype_name(issue.dtype), "\""));
}

namespace {
std::string bytes_text(size_t bytes) {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0)
    return detail::concat(bytes / (1024 * 1024), " MiB");
  if (bytes >= 1024 && bytes % 1024 == 0) return detail::concat(bytes / 1024, " KiB");
  return detail::concat(bytes, " B");
}
}  // namespace

std::string Communicator::explain_choice(CollectiveKind kind, size_t bytes, Algorithm requested) const {
  const Algorithm chosen = resolve(kind, bytes, requested);
  const std::string b = bytes_text(bytes);
  if (requested != Algorithm::automatic) return detail::concat("asked for: ", algorithm_name(chosen));
  const std::string rd = bytes_text(options_.recursive_doubling_max_bytes);
  switch (kind) {
    case CollectiveKind::all_reduce:
      if (chosen == Algorithm::hierarchical)
        return detail::concat(b, " > ", rd, " on ", hosts_, " hosts sharing ranks: hierarchical");
      if (chosen == Algorithm::shared_memory) {
        const bool capped = options_.shared_memory_max_bytes != std::numeric_limits<size_t>::max();
        // Rounds are a slot long but the last; each is scattered when it is long enough, so the
        // first round says whether any is and the last whether all are.
        const size_t slot = options_.shared_memory_slot_bytes, min = options_.shared_memory_scatter_min_bytes;
        const size_t first = std::min(bytes, slot), last = bytes > slot ? (bytes - 1) % slot + 1 : bytes;
        return detail::concat(
            b, capped ? " <= " + bytes_text(options_.shared_memory_max_bytes) : "",
            " with every rank on one host (RINGDP_SHM_MAX_BYTES; ",
            first < min   ? "each rank reads the others' parts from shared memory"
            : last >= min ? "each rank reduces 1/N of every round out of shared memory and copies "
                            "the others' results, RINGDP_SHM_SCATTER_MIN_BYTES"
                          : detail::concat("each rank reduces 1/N of every round out of shared memory "
                                           "and copies the others' results but reads the last, ",
                                           bytes_text(last), ", whole; RINGDP_SHM_SCATTER_MIN_BYTES"),
            "): shared_memory");
      }
      if (chosen == Algorithm::recursive_doubling)
        return detail::concat(b, " <= ", rd,
                              " (RINGDP_RD_MAX_BYTES; latency-bound, log2 N steps): recursive_doubling");
      if (chosen == Algorithm::rabenseifner)
        return detail::concat(rd, " < ", b, " <= ", bytes_text(options_.rabenseifner_max_bytes), " on ",
                              size_, " >= 4 ranks (RINGDP_RABENSEIFNER_MAX_BYTES): rabenseifner");
      return detail::concat(b, " > ", rd,
                            size_ >= 4
                                ? detail::concat(" and > ", bytes_text(options_.rabenseifner_max_bytes),
                                                 " (RINGDP_RABENSEIFNER_MAX_BYTES)")
                                : detail::concat(" on ", size_, " < 4 ranks"),
                            " (bandwidth-bound, 2(N-1) steps of 1/N each): ring");
    case CollectiveKind::broadcast:
      return chosen == Algorithm::tree
                 ? detail::concat(b, " < ", bytes_text(options_.chain_broadcast_min_bytes),
                                  " (RINGDP_CHAIN_MIN_BYTES): binomial tree")
                 : detail::concat(b, " >= ", bytes_text(options_.chain_broadcast_min_bytes),
                                  " (RINGDP_CHAIN_MIN_BYTES): pipelined chain");
    default: return detail::concat("the only algorithm of ringdp's own: ", algorithm_name(chosen));
  }
}

void Communicator::run_hierarchical(Call& call, void* buf, int64_t n) {
  if (!host_transport_) {  // a world of one without MPI: nothing to reduce
    all_reduce_ring(call.ctx, buf, buf, n);
    return;
  }
  CollectiveContext host = armed(*host_transport_, call.ctx.dtype, call.ctx.tag);
  CollectiveContext cross = armed(*cross_transport_, call.ctx.dtype, call.ctx.tag);
  host.op = cross.op = call.ctx.op;
  host.corrupt_next_receive = call.ctx.corrupt_next_receive;
  all_reduce_hierarchical(host, cross, buf, n, uniform_hosts_, options_.recursive_doubling_max_bytes);
}

Work Communicator::reduce(Tensor& tensor, int root, ReduceOp op, CollectiveOptions opts) {
  return reduce(tensor, tensor, root, op, opts);
}

Work Communicator::reduce(const Tensor& input, Tensor& output, int root, ReduceOp op,
                          CollectiveOptions opts) {
  check_pair(input, output, "reduce");
  check_overlap(input, output, "reduce", input, output, 0);
  check_root(root, size_, "reduce");
  RINGDP_CHECK(input.numel() == output.numel(), "reduce: input has ", input.numel(), " elements, output ",
               output.numel());
  check_op(op, input.dtype());
  const Algorithm algorithm = resolve(CollectiveKind::reduce, input.nbytes(), opts.algorithm);
  const Issue issue{.kind = CollectiveKind::reduce,
                    .dtype = input.dtype(),
                    .count = input.numel(),
                    .algorithm = algorithm,
                    .op = op,
                    .root = root,
                    .route = route_for(input),
                    .async = opts.async};
  if (run_direct(issue, [&] {
        // As below: a rank other than root passes its input as the (ignored) receive buffer.
        const Tensor& out = (rank_ == root && !output.is_same(input)) ? output : input;
        transport_->native_reduce(input.data_ptr(), out.data_ptr(), input.numel(), input.dtype(), op, root);
        if (rank_ == root && op == ReduceOp::avg) scale_result(output, 1.0 / size_);
      }))
    return Work::returned();
  return submit(issue, input, output, [this, root, op](Call& call, const Tensor& input, Tensor& output) {
    const Tensor& in = call.view(input);
    // Only root's output is written (the tree accumulates elsewhere on other ranks, and the
    // libraries ignore a non-root receive buffer), so other ranks pass their input in its place.
    const Tensor& out = (rank_ == root && !output.is_same(input)) ? call.view(output) : in;
    call.ctx.op = op == ReduceOp::avg ? ReduceOp::sum : op;
    if (call.native()) {
      call.ctx.transport.native_reduce(in.data_ptr(), out.data_ptr(), in.numel(), in.dtype(), op, root);
    } else {
      reduce_tree(call.ctx, in.data_ptr(), out.data_ptr(), call.effective(in.numel()), root);
    }
    call.settle();
    if (rank_ == root) {
      if (op == ReduceOp::avg) scale_result(out, 1.0 / size_);
      write_back(output, out);
    }
  });
}

Work Communicator::broadcast(Tensor& tensor, int root, CollectiveOptions opts) {
  return broadcast(tensor, tensor, root, opts);
}

Work Communicator::broadcast(const Tensor& input, Tensor& output, int root, CollectiveOptions opts) {
  check_pair(input, output, "broadcast");
  check_overlap(input, output, "broadcast", input, output, 0);
  check_root(root, size_, "broadcast");
  RINGDP_CHECK(input.numel() == output.numel(), "broadcast: input has ", input.numel(), " elements, output ",
               output.numel());
  const Algorithm algorithm = resolve(CollectiveKind::broadcast, input.nbytes(), opts.algorithm);
  const Issue issue{.kind = CollectiveKind::broadcast,
                    .dtype = input.dtype(),
                    .count = input.numel(),
                    .algorithm = algorithm,
                    .root = root,
                    .route = route_for(input),
                    .async = opts.async};
  if (run_direct(issue, [&] {
        if (rank_ == root && !output.is_same(input))
          transport_->copy(output.data_ptr(), input.data_ptr(), input.nbytes());
        transport_->native_broadcast(output.data_ptr(), output.numel(), output.dtype(), root);
      }))
    return Work::returned();
  return submit(issue, input, output, [this, root](Call& call, const Tensor& input, Tensor& output) {
    const Tensor& out = call.view(output);
    if (rank_ == root && !output.is_same(input)) {
      const Tensor& in = call.view(input);
      call.ctx.transport.copy(out.data_ptr(), in.data_ptr(), in.nbytes());
    }
    if (call.native()) {
      call.ctx.transport.native_broadcast(out.data_ptr(), out.numel(), out.dtype(), root);
    } else {
      if (call.algorithm == Algorithm::ring)
        broadcast_chain(call.ctx, out.data_ptr(), call.effective(out.numel()), root);
      else
        broadcast_tree(call.ctx, out.data_ptr(), call.effective(out.numel()), root);
    }
    call.settle();
    write_back(output, out);
  });
}

Work Communicator::all_gather(const Tensor& input, Tensor& output, CollectiveOptions opts) {
  check_pair(input, output, "all_gather");
  check_overlap(input, output, "all_gather", output, input, rank_ * input.nbytes());
  RINGDP_CHECK(output.numel() == input.numel() * size_, "all_gather: output has ", output.numel(),
               " elements; expected ", size_, " ranks x ", input.numel(), " = ", input.numel() * size_);
  const Algorithm algorithm = resolve(CollectiveKind::all_gather, output.nbytes(), opts.algorithm);
  const Issue issue{.kind = CollectiveKind::all_gather,
                    .dtype = input.dtype(),
                    .count = input.numel(),
                    .algorithm = algorithm,
                    .route = route_for(input),
                    .async = opts.async};
  if (run_direct(issue, [&] {
        transport_->native_all_gather(input.data_ptr(), output.data_ptr(), input.numel(), input.dtype());
      }))
    return Work::returned();
  return submit(issue, input, output, [](Call& call, const Tensor& input, Tensor& output) {
    const Tensor& in = call.view(input);
    const Tensor& out = call.view(output);
    if (call.native()) {
      call.ctx.transport.native_all_gather(in.data_ptr(), out.data_ptr(), in.numel(), in.dtype());
    } else {
      all_gather_ring(call.ctx, in.data_ptr(), out.data_ptr(), call.effective(in.numel()));
    }
    call.settle();
    write_back(output, out);
  });
}

Work Communicator::reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op, CollectiveOptions opts) {
  check_pair(input, output, "reduce_scatter");
  check_overlap(input, output, "reduce_scatter", input, output, rank_ * output.nbytes());
  RINGDP_CHECK(input.numel() == output.numel() * size_, "reduce_scatter: input has ", input.numel(),
               " elements; expected ", size_, " ranks x ", output.numel(), " = ", output.numel() * size_);
  check_op(op, input.dtype());
  const Algorithm algorithm = resolve(CollectiveKind::reduce_scatter, input.nbytes(), opts.algorithm);
  const Issue issue{.kind = CollectiveKind::reduce_scatter,
                    .dtype = input.dtype(),
                    .count = output.numel(),
                    .algorithm = algorithm,
                    .op = op,
                    .route = route_for(input),
                    .async = opts.async};
  if (run_direct(issue, [&] {
        transport_->native_reduce_scatter(input.data_ptr(), output.data_ptr(), output.numel(), input.dtype(),
                                          op);
        if (op == ReduceOp::avg) scale_result(output, 1.0 / size_);
      }))
    return Work::returned();
  return submit(issue, input, output, [this, op](Call& call, const Tensor& input, Tensor& output) {
    const Tensor& in = call.view(input);
    const Tensor& out = call.view(output);
    call.ctx.op = op == ReduceOp::avg ? ReduceOp::sum : op;
    if (call.native()) {
      call.ctx.transport.native_reduce_scatter(in.data_ptr(), out.data_ptr(), out.numel(), in.dtype(), op);
    } else {
      reduce_scatter_ring(call.ctx, in.data_ptr(), out.data_ptr(), call.effective(out.numel()));
    }
    call.ctx.end_steps();  // the observer sees the sum, before avg's division
    call.settle();
    if (op == ReduceOp::avg) scale_result(out, 1.0 / size_);
    write_back(output, out);
  });
}

Work Communicator::barrier(CollectiveOptions opts) {
  const Algorithm algorithm = resolve(CollectiveKind::barrier, 0, opts.algorithm);
  const Issue issue{.kind = CollectiveKind::barrier, .algorithm = algorithm, .async = opts.async};
  if (run_direct(issue, [&] { transport_->native_barrier(); })) return Work::returned();
  Tensor none;
  return submit(issue, none, none, [](Call& call, const Tensor&, Tensor&) {
    if (call.native()) {
      call.ctx.transport.native_barrier();
    } else {
      barrier_dissemination(call.ctx);
    }
  });
}

Work Communicator::send(const Tensor& tensor, int peer, int tag, CollectiveOptions opts) {
  return point_to_point(CollectiveKind::send, tensor, peer, tag, opts.async);
}

Work Communicator::recv(Tensor& tensor, int peer, int tag, CollectiveOptions opts) {
  return point_to_point(CollectiveKind::recv, tensor, peer, tag, opts.async);
}

Work Communicator::point_to_point(CollectiveKind kind, Tensor tensor, int peer, int tag, bool async) {
  const char* what = kind_name(kind);
  RINGDP_CHECK(tensor.defined(), what, ": undefined tensor");
  RINGDP_CHECK(peer >= 0 && peer < size_ && peer != rank_, what, ": peer ", peer,
               " is not another rank (rank ", rank_, " of ", size_, "; expected 0..", size_ - 1,
               " other than ", rank_, ")");
  const int max_tag = std::min(transport_->tag_upper_bound(), kUserTagBase - 1);
  RINGDP_CHECK(tag >= 0 && tag <= max_tag, what, ": tag ", tag, " out of range (expected 0 to ", max_tag,
               ", MPI's tag upper bound MPI_TAG_UB here)");
  // A posted message must not wait in the ordered queue for its partner, or an asynchronous
  // send followed by a receive (the usual ring exchange) would deadlock: the queued part only
  // posts it, and the Work's wait() completes it.
  struct Pending {
    Tensor host;
    Request request;
  };
  auto pending = std::make_shared<Pending>();
  const Issue issue{.kind = kind, .dtype = tensor.dtype(), .count = tensor.numel(), .async = async};
  Work posted = submit(issue, tensor, tensor,
                       [this, kind, peer, tag, pending, async](Call& call, const Tensor&, Tensor& tensor) {
                         call.ctx.position.waiting_for_rank = peer;
                         pending->host = host_view(tensor);
                         pending->request =
                             kind == CollectiveKind::send
                                 ? transport_->isend(peer, pending->host.data_ptr(), pending->host.nbytes(),
                                                     kUserTagBase + tag)
                                 : transport_->irecv(peer, pending->host.data_ptr(), pending->host.nbytes(),
                                                     kUserTagBase + tag);
                         if (async) return;
                         transport_->wait(pending->request);
                         if (kind == CollectiveKind::recv) write_back(tensor, pending->host);
                       });
  if (!async) return posted;
  // Finishing polls, taking the execution lock for one test at a time: blocking in a wait while
  // holding it would keep a collective queued behind this call from starting, and the peer may
  // send only after that collective (a receive, an all_reduce, then wait() on the receive).
  Position where{.kind = kind,
                 .sequence = p2p_sequence_ - 1,
                 .algorithm = Algorithm::native,
                 .count = tensor.numel(),
                 .dtype = tensor.dtype(),
                 .waiting_for_rank = peer};
  auto finish = [this, kind, tensor, pending, where]() mutable {
    const auto deadline = Transport::Clock::now() + options_.timeout;
    for (;;) {
      {
        std::lock_guard exec(queue_.exec_mutex());
        if (transport_->test(pending->request)) break;
      }
      if (Transport::Clock::now() > deadline) report_deadline(where);
      std::this_thread::yield();
    }
    if (kind == CollectiveKind::recv) write_back(tensor, pending->host);
  };
  auto poll = [this, pending] {
    std::unique_lock exec(queue_.exec_mutex(), std::try_to_lock);
    return exec.owns_lock() && transport_->test(pending->request);
  };
  return Work::then(posted, std::move(finish), std::move(poll));
}

}  // namespace ringdp::comm

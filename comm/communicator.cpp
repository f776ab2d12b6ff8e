// Implements comm/communicator.h (the contract is documented there). Tested by tests/mpi/ (collectives, async, errors) and tests/cli/bench.sh.
#include "comm/communicator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <thread>

#include "comm/algorithms.h"
#include "comm/cuda_stream_transport.h"
#include "comm/fault.h"
#include "comm/envelope.h"
#include "comm/fingerprint.h"
#include "comm/mpi_cuda_transport.h"
#include "comm/mpi_runtime.h"
#include "comm/mpi_transport.h"
#include "comm/native_mpi.h"
#include "comm/native_nccl.h"
#include "comm/nccl_transport.h"
#include "config.h"
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
  RINGDP_CHECK(input.device() == output.device(), what, ": input on ", input.device().str(),
               ", output on ", output.device().str(), "; both must be on one device");
}

// Where a collective works on host copies (host tensors; CUDA tensors given to MPI's own
// collectives without CUDA-aware MPI; user send/recv), the copy is made here. to() returns the
// tensor itself when it is already on the host.
Tensor host_view(const Tensor& t) { return t.to(Device::cpu()); }
void write_back(Tensor& target, const Tensor& host) {
  if (!target.is_same(host)) target.copy_from(host);
}

}  // namespace

struct Communicator::Call {
  CollectiveContext ctx;
  Algorithm algorithm;
  int64_t count_delta = 0;  ///< RINGDP_FAULT count: run with this many elements more (or fewer)
  bool on_device = false;   ///< device pointers throughout (NCCL, or MpiCudaTransport): no host copies
  std::function<void()> finish_device;  ///< joins (or waits for) the enqueued device work
  Route route = Route::host;
  std::function<void()> wait_device;    ///< blocks the host until the device work is done
  bool settled = false;

  /// Ends the device part of the collective, once: from here the caller's stream (or, with
  /// blocking_wait, the host) is ordered after it. No-op on the host path.
  void settle() {
    if (settled) return;
    settled = true;
    finish_device();
  }

  /// The tensor the transport works on: itself over NCCL, a host copy over MPI.
  Tensor view(const Tensor& t) const { return on_device ? t : host_view(t); }
  /// The library's own collective runs whenever asked for, except in a host world of one, where
  /// there is no MPI communicator (ringdp's algorithms are then the identity). NCCL has one even
  /// at size 1, and running it there is how the GPU tests exercise it.
  bool use_native(int world_size) const {
    return algorithm == Algorithm::native && (world_size > 1 || route == Route::nccl);
  }

  /// The element count to run with: n, changed by an injected fault, kept within the tensor.
  int64_t effective(int64_t n) const { return std::clamp<int64_t>(n + count_delta, 0, n); }
};

std::shared_ptr<Communicator> Communicator::init(CommOptions options) {
  // The environment overrides the caller: it is how a user changes a deadline without a rebuild.
  if (std::getenv("RINGDP_TIMEOUT")) options.timeout = std::chrono::seconds(env_number("RINGDP_TIMEOUT", 0));
  if (std::getenv("RINGDP_TIMEOUT_MS")) options.timeout = std::chrono::milliseconds(env_number("RINGDP_TIMEOUT_MS", 0));
  RINGDP_CHECK(options.timeout.count() > 0, "the collective timeout must be positive");
  options.segment_bytes = env_number("RINGDP_SEGMENT_BYTES", options.segment_bytes);
  options.recursive_doubling_max_bytes =
      env_number("RINGDP_RD_MAX_BYTES", options.recursive_doubling_max_bytes);
  options.chain_broadcast_min_bytes = env_number("RINGDP_CHAIN_MIN_BYTES", options.chain_broadcast_min_bytes);
  if (std::getenv("RINGDP_BLOCKING_WAIT")) options.blocking_wait = env_number("RINGDP_BLOCKING_WAIT", 0) != 0;
  if (const char* backend = std::getenv("RINGDP_BACKEND"); backend && *backend) options.backend = backend;
  RINGDP_CHECK(options.backend == "auto" || options.backend == "mpi" || options.backend == "nccl",
               "unknown backend '", options.backend, "'; expected auto, mpi or nccl");
  RINGDP_CHECK(options.backend != "nccl" || RINGDP_HAVE_NCCL, "backend nccl: ringdp was built without NCCL "
               "(configure with -Dnccl=enabled on a machine with CUDA and NCCL)");
  const bool under_launcher = launched_by_mpi_launcher() && !options.force_local;
#if RINGDP_HAVE_MPI
  if (under_launcher) {
    mpi_ensure_initialized();
    auto transport = std::make_unique<MpiTransport>(MPI_COMM_WORLD);
    MPI_Comm node;
    MPI_CHECK(MPI_Comm_split_type(transport->comm(), MPI_COMM_TYPE_SHARED, transport->rank(), MPI_INFO_NULL, &node));
    int local_rank = 0, local_size = 1;
    MPI_CHECK(MPI_Comm_rank(node, &local_rank));
    MPI_CHECK(MPI_Comm_size(node, &local_size));
    MPI_CHECK(MPI_Comm_free(&node));
    if (options.segment_bytes == 0) {
      // Ranks that share cores progress only while scheduled: small segments keep each time
      // slice useful. Ranks with a core each do better with fewer, larger messages.
      const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
      options.segment_bytes = static_cast<unsigned>(local_size) > cores ? 64 * 1024 : 1024 * 1024;
    }
    std::shared_ptr<Communicator> comm(new Communicator(std::move(transport), options));
    comm->backend_ = "mpi";
    comm->local_rank_ = local_rank;
    comm->local_size_ = local_size;
    return comm;
  }
#else
  RINGDP_CHECK(!under_launcher || launcher_world_size() == 1, "ringdp was built without MPI but was "
               "started by mpirun with ", launcher_world_size(), " ranks; rebuild with -Dmpi=enabled");
#endif
  if (options.segment_bytes == 0) options.segment_bytes = 1024 * 1024;
  return std::shared_ptr<Communicator>(new Communicator(std::make_unique<LocalTransport>(), options));
}

Communicator::Communicator(std::unique_ptr<Transport> transport, CommOptions options)
    : transport_(std::move(transport)), options_(options) {
  rank_ = transport_->rank();
  size_ = transport_->size();
  const char* trace = std::getenv("RINGDP_TRACE");
  trace_ = trace && std::strcmp(trace, "0") != 0 && *trace;
  const char* debug = std::getenv("RINGDP_DEBUG");
  check_calls_ = debug && std::strcmp(debug, "DETAIL") == 0;
}

Communicator::~Communicator() {
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

Algorithm Communicator::resolve(CollectiveKind kind, size_t bytes, Algorithm requested) const {
  auto pick = [&](std::initializer_list<Algorithm> available, Algorithm fallback) {
    if (requested == Algorithm::automatic) return fallback;
    for (Algorithm a : available)
      if (a == requested) return a;
    std::string names;
    for (Algorithm a : available) names += std::string(names.empty() ? "" : ", ") + algorithm_name(a);
    RINGDP_FAIL(kind_name(kind), " has no ", algorithm_name(requested), " algorithm; available: ",
                names, ", auto");
  };
  switch (kind) {
    case CollectiveKind::all_reduce:
      return pick({Algorithm::ring, Algorithm::recursive_doubling, Algorithm::native},
                  bytes <= options_.recursive_doubling_max_bytes ? Algorithm::recursive_doubling
                                                                  : Algorithm::ring);
    case CollectiveKind::reduce:
      return pick({Algorithm::tree, Algorithm::native}, Algorithm::tree);
    case CollectiveKind::broadcast:
      // `ring` names the pipelined chain: the ring with its last link missing.
      return pick({Algorithm::tree, Algorithm::ring, Algorithm::native},
                  bytes < options_.chain_broadcast_min_bytes ? Algorithm::tree : Algorithm::ring);
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
      return pick({Algorithm::ring, Algorithm::native}, Algorithm::ring);
    case CollectiveKind::barrier:
      // The dissemination barrier is our only one; `tree` and `ring` name nothing here.
      return pick({Algorithm::recursive_doubling, Algorithm::native}, Algorithm::recursive_doubling);
    case CollectiveKind::send:
    case CollectiveKind::recv:
      return Algorithm::native;
  }
  return requested;
}

Work Communicator::submit(CollectiveKind kind, const Tensor& reference, int64_t count,
                          Algorithm algorithm, bool async, std::function<void(Call&)> body, ReduceOp op, int root,
                          Route route) {
  const uint64_t sequence = sequence_++;
  const DType dtype = reference.defined() ? reference.dtype() : DType::float32;
  const FaultPlan& faults = FaultPlan::from_environment();
  int64_t delay_ms = 0;
  int64_t count_delta = 0;
  bool corrupt = false;
  if (!faults.empty()) {
    if (faults.find(Fault::Kind::kill, rank_, sequence)) {
      std::fprintf(stderr, "ringdp: rank %d: RINGDP_FAULT kill at %s #%llu\n", rank_, kind_name(kind),
                   static_cast<unsigned long long>(sequence));
      std::raise(SIGKILL);
    }
    if (faults.find(Fault::Kind::skip, rank_, sequence)) return Work::completed();
    if (const Fault* f = faults.find(Fault::Kind::delay, rank_, sequence)) delay_ms = f->ms;
    if (const Fault* f = faults.find(Fault::Kind::count, rank_, sequence)) count_delta = f->delta;
    corrupt = faults.find(Fault::Kind::corrupt, rank_, sequence) != nullptr;
  }
  auto task = [this, kind, sequence, dtype, count, algorithm, delay_ms, count_delta, corrupt, op, root, route,
               body = std::move(body)] {
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    position_ = Position{};
    position_.kind = kind;
    position_.sequence = sequence;
    position_.algorithm = algorithm;
    position_.count = count;
    position_.dtype = dtype;
    // MPI's own collectives take host copies of CUDA tensors unless MPI is CUDA-aware.
    Transport* device = route == Route::nccl ? &nccl_transport() : route == Route::mpi_cuda ? &mpi_cuda_transport() : nullptr;
#if RINGDP_HAVE_CUDA
    if (route == Route::mpi_cuda && algorithm == Algorithm::native &&
        static_cast<MpiCudaTransport*>(device)->path() != MpiCudaTransport::Path::cuda_aware)
      device = nullptr;
#endif
    Transport& transport = device ? *device : *transport_;
    // The corrupt fault flips a bit from the host, so it applies where messages land in host memory.
    Call call{CollectiveContext{transport, dtype, ReduceOp::sum, position_, options_.segment_bytes,
                                trace_, encode_tag(kind, dtype, sequence), requests_, corrupt && !device},
              algorithm, count_delta, device != nullptr, [] {}, route, [] {}};
    transport.set_deadline(Transport::Clock::now() + options_.timeout, [this] { on_deadline(); });
#if RINGDP_HAVE_CUDA
    if (device) {
      auto& cuda = static_cast<CudaStreamTransport&>(*device);
      cuda.activate();          // this may be the worker thread: the device is per host thread
      cuda.wait_for_compute();  // the inputs were written on the compute (default) stream
      call.wait_device = [&cuda] { cuda.synchronize(); };
      if (options_.blocking_wait) {
        call.finish_device = [&cuda] { cuda.synchronize(); };
      } else {
        call.finish_device = [this, &cuda] { cuda.join_caller(position_.describe(), options_.timeout); };
      }
    }
#endif
    if (check_calls_ && size_ > 1 && kind != CollectiveKind::send && kind != CollectiveKind::recv) {
      const Fingerprint mine{static_cast<int64_t>(kind), static_cast<int64_t>(op), static_cast<int64_t>(dtype),
                             call.effective(count), root, static_cast<int64_t>(sequence)};
      // A host-side check: its exchange runs over the host transport whatever the tensors' device.
      transport_->set_deadline(Transport::Clock::now() + options_.timeout, [this] { on_deadline(); });
      CollectiveContext host{*transport_, dtype, ReduceOp::sum, position_, options_.segment_bytes,
                             trace_, call.ctx.tag, requests_, false};
      const std::string mismatch = compare_fingerprints(host, mine);
      if (!mismatch.empty()) {
        std::fprintf(stderr, "ringdp: rank %d: %s; ending the job\n", rank_, mismatch.c_str());
        abort_job(1);
      }
    }
    if (!device) {
      body(call);
      return;
    }
    try {
      body(call);
      call.settle();
    } catch (const Error& e) {
      // A CUDA or NCCL error names the call that failed; say which collective and step it was in.
      throw Error(detail::concat(position_.describe(), " on rank ", rank_, ": ", e.what()));
    }
  };
  Work work;
  std::unique_lock lock(queue_mutex_);
  if (!async && queue_.empty() && !worker_busy_) {
    lock.unlock();
    std::lock_guard exec(exec_mutex_);
    task();
    return Work::completed();
  }
  if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  queue_.push_back([task = std::move(task), work] {
    try {
      task();
      work.mark_done();
    } catch (...) {
      work.mark_done(std::current_exception());
    }
  });
  lock.unlock();
  queue_cv_.notify_one();
  if (!async) work.wait();
  return work;
}

void Communicator::worker_loop() {
  std::unique_lock lock(queue_mutex_);
  for (;;) {
    queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything issued has run
    auto task = std::move(queue_.front());
    queue_.pop_front();
    worker_busy_ = true;
    lock.unlock();
    {
      std::lock_guard exec(exec_mutex_);
      task();
    }
    lock.lock();
    worker_busy_ = false;
  }
}

Communicator::Route Communicator::route_for(const Tensor& t) const {
  if (options_.backend == "nccl") {
    RINGDP_CHECK(RINGDP_HAVE_NCCL, "--backend nccl: ringdp was built without NCCL (configure with -Dnccl=enabled "
                 "on a machine with CUDA and NCCL)");
    RINGDP_CHECK(!t.defined() || t.device().is_cuda(), "--backend nccl needs CUDA tensors; got a tensor on ",
                 t.device().str(), " (use --backend mpi or auto for host tensors)");
    return t.defined() ? Route::nccl : Route::host;
  }
  if (!t.defined() || !t.device().is_cuda()) return Route::host;
  return RINGDP_HAVE_NCCL && options_.backend == "auto" ? Route::nccl : Route::mpi_cuda;
}

Transport& Communicator::nccl_transport() {
#if RINGDP_HAVE_NCCL
  if (!nccl_transport_) {
    std::function<void(void*, size_t)> broadcast_id = [](void*, size_t) {};
#if RINGDP_HAVE_MPI
    if (auto* mpi = dynamic_cast<MpiTransport*>(transport_.get())) {
      MPI_Comm comm = mpi->comm();
      broadcast_id = [comm](void* id, size_t bytes) { MPI_CHECK(MPI_Bcast(id, static_cast<int>(bytes), MPI_BYTE, 0, comm)); };
    }
#endif
    nccl_transport_ = std::make_unique<NcclTransport>(rank_, size_, local_rank_, broadcast_id, options_.timeout);
  }
  return *nccl_transport_;
#else
  RINGDP_FAIL("the NCCL transport is not built in");
#endif
}

Transport& Communicator::mpi_cuda_transport() {
#if RINGDP_HAVE_CUDA
  if (!mpi_cuda_transport_) {
    bool over_mpi = false;
#if RINGDP_HAVE_MPI
    over_mpi = dynamic_cast<MpiTransport*>(transport_.get()) != nullptr;
#endif
    const auto path = over_mpi && mpi_cuda_aware() ? MpiCudaTransport::Path::cuda_aware : MpiCudaTransport::Path::staged;
    mpi_cuda_transport_ = std::make_unique<MpiCudaTransport>(*transport_, local_rank_, path);
    const char* debug = std::getenv("RINGDP_DEBUG");
    if (debug && rank_ == 0 && (std::strcmp(debug, "INFO") == 0 || std::strcmp(debug, "DETAIL") == 0))
      std::fprintf(stderr, "ringdp: CUDA tensors over MPI: %s\n", path_name(path));
  }
  return *mpi_cuda_transport_;
#else
  RINGDP_FAIL("CUDA tensors need a build with CUDA");
#endif
}

void Communicator::on_deadline() {
  std::fprintf(stderr, "ringdp: rank %d: %s exceeded %.3g s; ending the job\n", rank_,
               position_.describe().c_str(), options_.timeout.count() / 1000.0);
  abort_job(1);
}

// --- collectives ----------------------------------------------------------------------------

Work Communicator::all_reduce(Tensor& tensor, ReduceOp op, CollectiveOptions opts) {
  return all_reduce(tensor, tensor, op, opts);
}

Work Communicator::all_reduce(const Tensor& input, Tensor& output, ReduceOp op, CollectiveOptions opts) {
  check_pair(input, output, "all_reduce");
  RINGDP_CHECK(input.numel() == output.numel(), "all_reduce: input has ", input.numel(),
               " elements, output ", output.numel());
  check_op(op, input.dtype());
  const Algorithm algorithm = resolve(CollectiveKind::all_reduce, input.nbytes(), opts.algorithm);
  return submit(CollectiveKind::all_reduce, input, input.numel(), algorithm, opts.async,
                [this, input, output, op](Call& call) mutable {
    Tensor in = call.view(input);
    Tensor out = output.is_same(input) ? in : call.view(output);
    call.ctx.op = op == ReduceOp::avg ? ReduceOp::sum : op;
    const int64_t n = call.effective(in.numel());
    Transport& transport = call.ctx.transport;
    if (call.use_native(size_)) {
      native_all_reduce(call, in.data_ptr(), out.data_ptr(), n, in.dtype(), op);
    } else if (call.algorithm == Algorithm::recursive_doubling) {
      transport.copy(out.data_ptr(), in.data_ptr(), in.nbytes());
      all_reduce_recursive_doubling(call.ctx, out.data_ptr(), n);
    } else {
      if (n < in.numel()) transport.copy(out.data_ptr(), in.data_ptr(), in.nbytes());  // an injected count fault
      all_reduce_ring(call.ctx, in.data_ptr(), out.data_ptr(), n);
    }
    call.settle();
    if (op == ReduceOp::avg) ops::scale_(out, 1.0 / size_);
    write_back(output, out);
  }, op, -1, route_for(input));
}

Work Communicator::reduce(Tensor& tensor, int root, ReduceOp op, CollectiveOptions opts) {
  return reduce(tensor, tensor, root, op, opts);
}

Work Communicator::reduce(const Tensor& input, Tensor& output, int root, ReduceOp op, CollectiveOptions opts) {
  check_pair(input, output, "reduce");
  check_root(root, size_, "reduce");
  RINGDP_CHECK(input.numel() == output.numel(), "reduce: input has ", input.numel(),
               " elements, output ", output.numel());
  check_op(op, input.dtype());
  const Algorithm algorithm = resolve(CollectiveKind::reduce, input.nbytes(), opts.algorithm);
  return submit(CollectiveKind::reduce, input, input.numel(), algorithm, opts.async,
                [this, input, output, root, op](Call& call) mutable {
    Tensor in = call.view(input);
    // Only root's output is written (the tree accumulates elsewhere on other ranks, and the
    // libraries ignore a non-root receive buffer), so other ranks pass their input in its place.
    Tensor out = (rank_ == root && !output.is_same(input)) ? call.view(output) : in;
    call.ctx.op = op == ReduceOp::avg ? ReduceOp::sum : op;
    if (call.use_native(size_)) {
      native_reduce(call, in.data_ptr(), out.data_ptr(), in.numel(), in.dtype(), op, root);
    } else {
      reduce_tree(call.ctx, in.data_ptr(), out.data_ptr(), call.effective(in.numel()), root);
    }
    call.settle();
    if (rank_ == root) {
      if (op == ReduceOp::avg) ops::scale_(out, 1.0 / size_);
      write_back(output, out);
    }
  }, op, root, route_for(input));
}

Work Communicator::broadcast(Tensor& tensor, int root, CollectiveOptions opts) {
  return broadcast(tensor, tensor, root, opts);
}

Work Communicator::broadcast(const Tensor& input, Tensor& output, int root, CollectiveOptions opts) {
  check_pair(input, output, "broadcast");
  check_root(root, size_, "broadcast");
  RINGDP_CHECK(input.numel() == output.numel(), "broadcast: input has ", input.numel(),
               " elements, output ", output.numel());
  const Algorithm algorithm = resolve(CollectiveKind::broadcast, input.nbytes(), opts.algorithm);
  return submit(CollectiveKind::broadcast, input, input.numel(), algorithm, opts.async,
                [this, input, output, root](Call& call) mutable {
    Tensor out = call.view(output);
    if (rank_ == root && !output.is_same(input)) {
      const Tensor in = call.view(input);
      call.ctx.transport.copy(out.data_ptr(), in.data_ptr(), in.nbytes());
    }
    if (call.use_native(size_)) {
      native_broadcast(call, out.data_ptr(), out.numel(), out.dtype(), root);
    } else {
      if (call.algorithm == Algorithm::ring) broadcast_chain(call.ctx, out.data_ptr(), call.effective(out.numel()), root);
      else broadcast_tree(call.ctx, out.data_ptr(), call.effective(out.numel()), root);
    }
    call.settle();
    write_back(output, out);
  }, ReduceOp::sum, root, route_for(input));
}

Work Communicator::all_gather(const Tensor& input, Tensor& output, CollectiveOptions opts) {
  check_pair(input, output, "all_gather");
  RINGDP_CHECK(output.numel() == input.numel() * size_, "all_gather: output has ", output.numel(),
               " elements; expected ", size_, " ranks x ", input.numel(), " = ", input.numel() * size_);
  const Algorithm algorithm = resolve(CollectiveKind::all_gather, output.nbytes(), opts.algorithm);
  return submit(CollectiveKind::all_gather, input, input.numel(), algorithm, opts.async,
                [this, input, output](Call& call) mutable {
    const Tensor in = call.view(input);
    Tensor out = call.view(output);
    if (call.use_native(size_)) {
      native_all_gather(call, in.data_ptr(), out.data_ptr(), in.numel(), in.dtype());
    } else {
      all_gather_ring(call.ctx, in.data_ptr(), out.data_ptr(), call.effective(in.numel()));
    }
    call.settle();
    write_back(output, out);
  }, ReduceOp::sum, -1, route_for(input));
}

Work Communicator::reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op, CollectiveOptions opts) {
  check_pair(input, output, "reduce_scatter");
  RINGDP_CHECK(input.numel() == output.numel() * size_, "reduce_scatter: input has ", input.numel(),
               " elements; expected ", size_, " ranks x ", output.numel(), " = ", output.numel() * size_);
  check_op(op, input.dtype());
  const Algorithm algorithm = resolve(CollectiveKind::reduce_scatter, input.nbytes(), opts.algorithm);
  return submit(CollectiveKind::reduce_scatter, input, output.numel(), algorithm, opts.async,
                [this, input, output, op](Call& call) mutable {
    const Tensor in = call.view(input);
    Tensor out = call.view(output);
    call.ctx.op = op == ReduceOp::avg ? ReduceOp::sum : op;
    if (call.use_native(size_)) {
      native_reduce_scatter(call, in.data_ptr(), out.data_ptr(), out.numel(), in.dtype(), op);
    } else {
      reduce_scatter_ring(call.ctx, in.data_ptr(), out.data_ptr(), call.effective(out.numel()));
    }
    call.settle();
    if (op == ReduceOp::avg) ops::scale_(out, 1.0 / size_);
    write_back(output, out);
  }, op, -1, route_for(input));
}

Work Communicator::barrier(CollectiveOptions opts) {
  const Algorithm algorithm = resolve(CollectiveKind::barrier, 0, opts.algorithm);
  return submit(CollectiveKind::barrier, Tensor(), 0, algorithm, opts.async, [this](Call& call) {
    if (call.use_native(size_)) {
#if RINGDP_HAVE_MPI
      native::barrier(static_cast<MpiTransport&>(*transport_).comm());
#endif
    } else {
      barrier_dissemination(call.ctx);
    }
  });
}

// --- the libraries' own collectives: NCCL's for CUDA tensors on NCCL, MPI's otherwise ------------

#if RINGDP_HAVE_NCCL
#define RINGDP_NCCL_OR_MPI(nccl_call, mpi_call)                                        \
  do {                                                                                 \
    if (call.route == Route::nccl) {                                                   \
      auto& nccl = static_cast<NcclTransport&>(call.ctx.transport);                   \
      native_nccl::nccl_call;                                                          \
      return;                                                                          \
    }                                                                                  \
    RINGDP_MPI_NATIVE(mpi_call);                                                       \
  } while (0)
#else
#define RINGDP_NCCL_OR_MPI(nccl_call, mpi_call) RINGDP_MPI_NATIVE(mpi_call)
#endif
#if RINGDP_HAVE_MPI
// With CUDA-aware MPI the pointers are device memory that MPI reads outside stream order, so the
// work that wrote them finishes first.
#define RINGDP_MPI_NATIVE(mpi_call) \
  do {                              \
    if (call.on_device) call.wait_device(); \
    native::mpi_call;               \
  } while (0)
#else
#define RINGDP_MPI_NATIVE(mpi_call) RINGDP_FAIL("native collectives need MPI")
#endif

void Communicator::native_all_reduce(Call& call, const void* in, void* out, int64_t n, DType dtype, ReduceOp op) {
  RINGDP_NCCL_OR_MPI(all_reduce(nccl.comm(), nccl.stream(), in, out, n, dtype, op),
                     all_reduce(static_cast<MpiTransport&>(*transport_).comm(), in, out, n, dtype, op));
}

void Communicator::native_reduce(Call& call, const void* in, void* out, int64_t n, DType dtype, ReduceOp op, int root) {
  RINGDP_NCCL_OR_MPI(reduce(nccl.comm(), nccl.stream(), in, out, n, dtype, op, root),
                     reduce(static_cast<MpiTransport&>(*transport_).comm(), in, out, n, dtype, op, root));
}

void Communicator::native_broadcast(Call& call, void* buf, int64_t n, DType dtype, int root) {
  RINGDP_NCCL_OR_MPI(broadcast(nccl.comm(), nccl.stream(), buf, n, dtype, root),
                     broadcast(static_cast<MpiTransport&>(*transport_).comm(), buf, n, dtype, root));
}

void Communicator::native_all_gather(Call& call, const void* in, void* out, int64_t chunk, DType dtype) {
  RINGDP_NCCL_OR_MPI(all_gather(nccl.comm(), nccl.stream(), in, out, chunk, dtype),
                     all_gather(static_cast<MpiTransport&>(*transport_).comm(), in, out, chunk, dtype));
}

void Communicator::native_reduce_scatter(Call& call, const void* in, void* out, int64_t chunk, DType dtype, ReduceOp op) {
  RINGDP_NCCL_OR_MPI(reduce_scatter(nccl.comm(), nccl.stream(), in, out, chunk, dtype, op),
                     reduce_scatter(static_cast<MpiTransport&>(*transport_).comm(), in, out, chunk, dtype, op));
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
  RINGDP_CHECK(tag >= 0 && tag < (1 << 30), what, ": tag ", tag, " out of range (expected 0 to 2^30 - 1)");
  // A posted message must not wait in the ordered queue for its partner, or an asynchronous
  // send followed by a receive (the usual ring exchange) would deadlock: the queued part only
  // posts it, and the Work's wait() completes it.
  struct Pending {
    Tensor host;
    Request request;
  };
  auto pending = std::make_shared<Pending>();
  Work posted = submit(kind, tensor, tensor.numel(), Algorithm::native, async,
                       [this, kind, tensor, peer, tag, pending, async](Call& call) mutable {
    call.ctx.position.waiting_for_rank = peer;
    pending->host = host_view(tensor);
    pending->request = kind == CollectiveKind::send
        ? transport_->isend(peer, pending->host.data_ptr(), pending->host.nbytes(), kUserTagBase + tag)
        : transport_->irecv(peer, pending->host.data_ptr(), pending->host.nbytes(), kUserTagBase + tag);
    if (async) return;
    transport_->wait(pending->request);
    if (kind == CollectiveKind::recv) write_back(tensor, pending->host);
  });
  if (!async) return posted;
  auto finish = [this, kind, tensor, pending]() mutable {
    std::lock_guard exec(exec_mutex_);
    transport_->set_deadline(Transport::Clock::now() + options_.timeout, [this] { on_deadline(); });
    transport_->wait(pending->request);
    if (kind == CollectiveKind::recv) write_back(tensor, pending->host);
  };
  auto poll = [this, pending] {
    std::unique_lock exec(exec_mutex_, std::try_to_lock);
    return exec.owns_lock() && transport_->test(pending->request);
  };
  return Work::then(posted, std::move(finish), std::move(poll));
}

}  // namespace ringdp::comm

// Communicator: the collectives on Tensors. Validates arguments before any message moves (so
// bad input is an Error on every rank, not a hang), picks an algorithm, and runs it over the
// abstract Transport of the tensors' route with a deadline, in issue order (comm/call_queue.h).
// It names no concrete transport except to create one.
// Tested in tests/mpi/test_collectives.cpp under mpirun with 1-4 ranks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "comm/call_queue.h"
#include "comm/fault.h"
#include "comm/position.h"
#include "comm/transport.h"
#include "comm/types.h"
#include "comm/work.h"
#include "core/timeline.h"
#include "tensor/tensor.h"

namespace ringdp::comm {

struct CollectiveContext;  // comm/algorithms.h

struct CommOptions {
  /// Deadline of each collective; RINGDP_TIMEOUT (seconds) overrides the default.
  std::chrono::milliseconds timeout = std::chrono::seconds(300);
  /// Ring pipelining unit; 0 = automatic: 1 MiB when this node's ranks each have a core,
  /// 64 KiB when they share cores (measured: docs/benchmarks.md). RINGDP_SEGMENT_BYTES overrides.
  /// Under MPI this and the two thresholds below are agreed at init: the minimum over ranks.
  size_t segment_bytes = 0;
  /// all_reduce with `auto` uses recursive doubling up to this many bytes, ring above
  /// (measured: docs/collectives.md); RINGDP_RD_MAX_BYTES overrides.
  size_t recursive_doubling_max_bytes = 32 * 1024;
  /// Above that, with 4 ranks or more, `auto` uses Rabenseifner's all-reduce (recursive halving
  /// and doubling) up to this many bytes, the ring above (host tensors; measured on 3 and 4
  /// ranks: docs/benchmarks.md, "Rabenseifner"); RINGDP_RABENSEIFNER_MAX_BYTES overrides, 0 = never.
  size_t rabenseifner_max_bytes = 2 * 1024 * 1024;
  /// Before all of those: with every rank on one host, `auto` reduces out of shared memory
  /// (comm/shared_slots.h) up to this many bytes (host tensors): by default at every size, where it
  /// beat the others from 8 B to 64 MiB on 2 and 4 ranks (docs/benchmarks.md, "Shared memory for
  /// large messages"). RINGDP_SHM_MAX_BYTES overrides, 0 = never.
  size_t shared_memory_max_bytes = std::numeric_limits<size_t>::max();
  /// A shared-memory round (up to shared_memory_slot_bytes) of at least this many bytes is scattered: each
  /// rank reduces one chunk and copies the others' (comm/all_reduce_shared.cpp); smaller rounds have every
  /// rank reduce everything. RINGDP_SHM_SCATTER_MIN_BYTES overrides.
  size_t shared_memory_scatter_min_bytes = 16 * 1024;
  /// The most one rank's part holds in one shared-memory round (each rank maps two such slots);
  /// a multiple of 64. RINGDP_SHM_SLOT_BYTES overrides.
  size_t shared_memory_slot_bytes = 256 * 1024;
  /// broadcast with `auto` uses the binomial tree up to this many bytes, the pipelined chain
  /// (`ring`) above; RINGDP_CHAIN_MIN_BYTES overrides.
  size_t chain_broadcast_min_bytes = 8 * 1024 * 1024;
  /// A world of one even under mpirun (tests of the local path).
  bool force_local = false;
  /// Transport for CUDA tensors: "auto" (NCCL when built in, else MPI through host staging),
  /// "mpi" or "nccl". Host tensors always travel over MPI.
  std::string backend = "auto";
  /// CUDA tensors: a collective returns once its work is enqueued and the caller's stream waits
  /// for it (the host does not), and a watchdog thread enforces the timeout. true (or
  /// RINGDP_BLOCKING_WAIT=1) makes every collective block the host until the GPU is done.
  bool blocking_wait = false;
  /// The thread level ringdp asks for when it initialises MPI (a program that initialised MPI
  /// itself keeps its own). serialized lets asynchronous collectives run on a worker thread;
  /// single is for programs that issue none: Open MPI then takes no locks, about 0.45 us less per
  /// small call on 2 ranks here (docs/benchmarks.md), and every call, an async one too, runs on
  /// the caller's thread. RINGDP_MPI_THREAD=serialized|single overrides.
  MpiThread mpi_thread = MpiThread::serialized;
};

struct CollectiveOptions {
  Algorithm algorithm = Algorithm::automatic;
  bool async = false;  ///< return at once; the Work completes when the collective has run
};

class Communicator {
 public:
  /// Under mpirun: the MPI world. Otherwise (or built without MPI): a world of one.
  static std::shared_ptr<Communicator> init(CommOptions options = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  /// Where this rank's tensors belong: cuda:(local_rank % visible GPUs) when a GPU is visible,
  /// else cpu. Decided here only: the CUDA transports run on this GPU, and the trainer, the
  /// bench and the tests ask for it, so no rank computes on one GPU and communicates on another.
  /// A CUDA tensor on any other GPU is refused by every collective, naming both.
  Device device() const { return device_; }
  const char* backend_name() const { return backend_; }
  const CommOptions& options() const { return options_; }

  Work all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::sum, CollectiveOptions opts = {});
  Work all_reduce(const Tensor& input, Tensor& output, ReduceOp op = ReduceOp::sum,
                  CollectiveOptions opts = {});
  /// The result lands on root; other ranks' tensors are left unchanged.
  Work reduce(Tensor& tensor, int root, ReduceOp op = ReduceOp::sum, CollectiveOptions opts = {});
  Work reduce(const Tensor& input, Tensor& output, int root, ReduceOp op = ReduceOp::sum,
              CollectiveOptions opts = {});
  Work broadcast(Tensor& tensor, int root, CollectiveOptions opts = {});
  /// Root's input lands in every rank's output.
  Work broadcast(const Tensor& input, Tensor& output, int root, CollectiveOptions opts = {});
  /// output holds size() · input.numel() elements; rank r's input lands at [r·n, (r+1)·n).
  Work all_gather(const Tensor& input, Tensor& output, CollectiveOptions opts = {});
  /// input holds size() · output.numel() elements; rank r gets the reduction of chunk r.
  Work reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op = ReduceOp::sum,
                      CollectiveOptions opts = {});
  Work barrier(CollectiveOptions opts = {});
  Work send(const Tensor& tensor, int peer, int tag = 0, CollectiveOptions opts = {});
  Work recv(Tensor& tensor, int peer, int tag = 0, CollectiveOptions opts = {});

  /// The algorithm `requested` resolves to for this collective and size (auto → a concrete
  /// one); an error when the collective has no such algorithm.
  Algorithm resolve(CollectiveKind kind, size_t bytes, Algorithm requested) const;
  /// Why resolve() picks what it picks, for a learner: "44 B <= 32 KiB (recursive doubling up
  /// to RINGDP_RD_MAX_BYTES): recursive_doubling". Host tensors.
  std::string explain_choice(CollectiveKind kind, size_t bytes, Algorithm requested) const;
  /// Calls `observer` at each step of every later collective, on the thread running it (see
  /// StepObserver); an empty one stops. For teaching and debugging: each call costs a jump.
  void set_step_observer(StepObserver observer);

 private:
  Communicator(std::unique_ptr<Transport> transport, CommOptions options);
  struct Call;
  /// A collective's body, not owned, and the tensors it runs on, not copied: a blocking call runs
  /// it on the caller's thread while the lambda and the caller's tensors are alive, so it needs
  /// no std::function (a heap allocation per call) and no tensor handle copies (two atomic
  /// reference-count operations each, issue #20); only a queued call copies the lambda and the
  /// tensors into one. The body's tensors are parameters, not captures, for that reason.
  class BodyRef {
   public:
    template <typename F>
    BodyRef(F& body, const Tensor& input, Tensor& output)
        : object_(&body),
          input_(&input),
          output_(&output),
          call_([](void* object, Call& call, const Tensor& in, Tensor& out) {
            (*static_cast<F*>(object))(call, in, out);
          }) {}
    void operator()(Call& call) const { call_(object_, call, *input_, *output_); }

   private:
    void* object_;
    const Tensor* input_;
    Tensor* output_;
    void (*call_)(void*, Call&, const Tensor&, Tensor&);
  };
  /// Where a collective's tensors travel: host memory over MPI (or a world of one), CUDA memory
  /// over NCCL, or CUDA memory over MPI (MpiCudaTransport: CUDA-aware or staged).
  enum class Route { host, nccl, mpi_cuda };
  /// One collective as issued: what DETAIL compares across ranks and the watchdog names.
  struct Issue {
    CollectiveKind kind;
    DType dtype = DType::float32;
    int64_t count = 0;
    Algorithm algorithm = Algorithm::native;
    ReduceOp op = ReduceOp::sum;
    int root = -1;
    Route route = Route::host;
    bool async = false;
  };
  /// Numbers the collective, carries out RINGDP_FAULT's plan for it, and queues it in issue order.
  /// `body(call, input, output)` runs it; a queued call holds its own handles to the tensors.
  template <typename F>
  Work submit(const Issue& issue, const Tensor& input, Tensor& output, F body);
  /// A blocking call of the library's own collective on host tensors when nothing watches
  /// collectives (no RINGDP_FAULT plan, no DETAIL check, no timeline, no step observer): numbers
  /// it and runs `library_call` in place, without execute()'s context, deadline and steps, which
  /// such a call never uses (issue #20). False, having run nothing, when the queue is busy or
  /// something watches: then submit() as usual.
  template <typename F>
  bool run_direct(const Issue& issue, F&& library_call);
  /// Runs one collective on whichever thread the queue chose: picks the transport, checks the
  /// call against the other ranks' (DETAIL), runs the body, joins the caller's stream.
  void execute(const Issue& issue, uint64_t sequence, const FaultAction& fault, BodyRef body);
  /// RINGDP_DEBUG=DETAIL: ends the job, naming both calls, when another rank issued another one.
  void check_same_call(const Issue& issue, uint64_t sequence, int64_t count, int tag);
  /// Posts one send or receive; the async form completes it outside the ordered queue.
  Work point_to_point(CollectiveKind kind, Tensor tensor, int peer, int tag, bool async);
  /// A wait passed the collective timeout: reports where the running collective is, ends the job.
  [[noreturn]] void on_deadline();
  /// The timeline event of one collective that began at `began` and ends now.
  void record_collective(const Issue& issue, uint64_t sequence, timeline::Clock::time_point began);
  [[noreturn]] void report_deadline(const Position& where);
  /// Several hosts, at least one with several ranks: where the hierarchical all-reduce helps.
  bool spans_hosts() const { return hosts_ > 1 && hosts_ < size_; }
  /// A collective's context on `transport`, whose deadline (the collective timeout) starts now;
  /// `watched` false leaves the deadline alone (MPI's own blocking collectives never poll it).
  CollectiveContext armed(Transport& transport, DType dtype, int tag, bool watched = true);
  /// The hierarchical all-reduce of buf (n elements) over the host and cross transports.
  void run_hierarchical(Call& call, void* buf, int64_t n);
  /// Throws unless the CUDA tensor t is on device().
  void check_device(const Tensor& t) const;
  /// The route of a collective on `t` (checks the backend against the device).
  Route route_for(const Tensor& t) const;
  /// The transport of a route; those of CUDA tensors are created by their first collective.
  Transport& transport_for(Route route);

  std::unique_ptr<Transport> transport_;
  /// RINGDP_FAULT's plan, read once (comm/fault.h): empty in any run that injects nothing.
  const FaultPlan& faults_ = FaultPlan::from_environment();
  std::unique_ptr<Transport> nccl_transport_;  // created by the first CUDA collective on NCCL
  std::unique_ptr<Transport> mpi_cuda_transport_;  // created by the first CUDA collective on MPI
  CommOptions options_;
  // options_.backend, compared once at construction instead of as a string per collective.
  bool nccl_backend_ = false, auto_backend_ = false;
  const char* backend_ = "local";
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  Device device_ = Device::cpu();  // see device(); set by decide_device() once the local rank is known
  void decide_device();
  // Hosts, for the hierarchical all-reduce (made at init under MPI; see hosts.cpp): this rank's
  // host, and the ranks of every host with this rank's index in its host.
  std::unique_ptr<Transport> host_transport_, cross_transport_;
  int hosts_ = 1;
  SharedSlots* shared_slots_ = nullptr;  ///< the host transport's, read once: every all_reduce asks
  bool uniform_hosts_ = true;
  bool trace_ = false;
  bool check_calls_ = false;  // RINGDP_DEBUG=DETAIL
  uint64_t sequence_ = 0;  // collectives issued: every rank issues each one, so it is part of their tags
  uint64_t p2p_sequence_ = 0;  // sends and receives: between some ranks only, so numbered apart
  int sequence_bits_ = 16;  // of the sequence in a tag: what fits under MPI_TAG_UB (comm/envelope.h)
  Position position_;
  StepObserver observer_;
  std::vector<Request> requests_;
  CallQueue queue_;  // last: destroyed first, so queued calls still find everything above
};

}  // namespace ringdp::comm

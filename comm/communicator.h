// Communicator: the collectives on Tensors, ringdp's public entry point (comm/communicator.cpp
// creates one and answers questions about it; comm/collectives.cpp describes each collective once;
// comm/point_to_point.cpp sends and receives). Tested in tests/mpi/ under mpirun with 1-4 ranks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "comm/comm_options.h"
#include "comm/position.h"
#include "comm/types.h"
#include "comm/work.h"
#include "core/reduce_op.h"
#include "tensor/tensor.h"

namespace ringdp::comm {

struct DiscoveredWorld;  // comm/world/discovery.h
struct Leaving;  // comm/leaving.h: not installed, only the exit hooks make one
class KeyValueStore;  // comm/bootstrap/key_value_store.h

/// The front door: checks each call's arguments before any message moves (so bad input is an
/// Error on every rank, not a hang), chooses its algorithm (comm/algorithms/algorithm_choice.h) and hands the
/// described collective to the executor (comm/execution/execution.h). Creating one is bootstrap
/// (comm/world/discovery.h); the transports of CUDA tensors are routes (comm/world/routes.h).
///
/// Threading: one thread at a time issues calls on a communicator (as with an MPI communicator
/// under MPI_THREAD_SERIALIZED); asynchronous calls run on its worker thread, and Work::wait()
/// may be called from any thread.
class Communicator {
 public:
  /// Under mpirun: the MPI world. Otherwise (or built without MPI): a world of one.
  static std::shared_ptr<Communicator> init(CommOptions options = {});
  /// A job no MPI launcher started (torchrun, mp.spawn, a framework's launcher): rank `rank` of
  /// `size`, meeting the other ranks through `store` (under options.timeout); UCX carries the
  /// messages and MPI is never initialised. Collective over the `size` ranks.
  static std::shared_ptr<Communicator> init(CommOptions options, std::shared_ptr<KeyValueStore> store,
                                            int rank, int size);
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
  Device device() const;
  /// What carries this rank's tensors: "nccl", "mpi", "ucx" (RINGDP_TRANSPORT=ucx) or "local" (a
  /// world of one without MPI).
  const char* backend_name() const;
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
  /// Uneven all_gather: rank r contributes counts[r] elements (input.numel() == counts[rank()]);
  /// output holds their sum, concatenated in rank order. counts must be equal on all ranks.
  Work all_gather(const Tensor& input, Tensor& output, std::span<const int64_t> counts,
                  CollectiveOptions opts = {});
  /// Rank r's input (n elements) lands at [r·n, (r+1)·n) of root's output (size()·n elements);
  /// output is not touched (and may be undefined/empty) on other ranks. In place: root's input
  /// may be its own block of the output.
  Work gather(const Tensor& input, Tensor& output, int root, CollectiveOptions opts = {});
  /// Root's input holds size()·n elements; rank r receives chunk r into its output (n elements).
  /// input is not read (may be undefined/empty) on other ranks. In place: root's output may be
  /// its own chunk of the input.
  Work scatter(const Tensor& input, Tensor& output, int root, CollectiveOptions opts = {});
  /// input and output hold size()·n elements: chunk j of input goes to rank j; chunk i of output
  /// comes from rank i. In place (one tensor for both) the input is first copied aside.
  Work all_to_all(const Tensor& input, Tensor& output, CollectiveOptions opts = {});
  /// Uneven splits: input's first send_counts[0] elements go to rank 0, the next send_counts[1] to
  /// rank 1, ...; output receives recv_counts[i] elements from rank i, concatenated in rank order.
  /// In place when input and output start at the same address (the input is copied aside first).
  /// recv_counts[i] on this rank must equal send_counts[this rank] on rank i. With ringdp's
  /// exchange a peer that sends another length is an Error at the receive, never a write past the
  /// output; `native` (MPI_Alltoallv, NCCL's grouped sends) leaves a shorter block unnoticed, and
  /// NCCL's behaviour for mismatched counts is undefined. RINGDP_DEBUG=DETAIL compares every pair
  /// before any block moves, whichever algorithm runs.
  Work all_to_all(const Tensor& input, std::span<const int64_t> send_counts, Tensor& output,
                  std::span<const int64_t> recv_counts, CollectiveOptions opts = {});
  Work barrier(CollectiveOptions opts = {});
  /// A communicator over `ranks` of this one: its rank i is this one's rank ranks[i]. Collective over
  /// exactly those ranks, which pass the same list (checked: an Error on every member if not); ranks
  /// outside it call nothing. The ranks must be in range, without duplicates, and hold the caller's.
  /// The group has its own messages, sequence numbers and watchdog, and runs beside this
  /// communicator; it takes this one's options (agreed again over its members).
  /// `timeout` > 0 replaces this communicator's collective timeout for the group (RINGDP_TIMEOUT
  /// still wins). Members that pass different sets of ranks hang in MPI; only the order is checked.
  std::shared_ptr<Communicator> group(std::span<const int> ranks, std::chrono::milliseconds timeout = {});
  Work send(const Tensor& tensor, int peer, int tag = 0, CollectiveOptions opts = {});
  /// Takes exactly the tensor's bytes: a message of another length is an Error naming both.
  Work recv(Tensor& tensor, int peer, int tag = 0, CollectiveOptions opts = {});
  /// A receive from whichever rank's send with `tag` matches first (MPI_ANY_SOURCE): `*source` is
  /// that rank once the Work completes (it must outlive the Work). Needs another rank.
  Work recv_any(Tensor& tensor, int* source, int tag = 0, CollectiveOptions opts = {});

  /// A CPU tensor whose storage is this rank's segment of a shared-memory window over every rank
  /// (MPI-3 MPI_Win_allocate_shared), zeroed. Collective: every rank calls it, in the same order
  /// with its other collectives, passing the same shape and dtype (checked: an Error on every rank
  /// naming the first rank that differs). An all_reduce whose tensors lie in such allocations at
  /// the same place on every rank (the tensors, or the same views of them) reads and writes the
  /// peers' buffers directly (`auto` and `shared_memory`: docs/collectives.md); every other use is
  /// that of a plain tensor. Refused, saying why, unless every rank runs on one host under MPI
  /// with shared windows in the unified memory model, and on groups.
  /// The memory stays until this communicator is destroyed (freeing a window is collective, and
  /// each rank drops its tensors at its own time), whatever becomes of the tensor: do not use the
  /// tensor, or a view of it, after the communicator is gone.
  Tensor allocate_shared(Shape shape, DType dtype);

  /// The algorithm `requested` resolves to for this collective and size on host tensors (auto → a
  /// concrete one); an error when the collective has no such algorithm (comm/algorithms/algorithm_choice.h).
  Algorithm resolve(CollectiveKind kind, size_t bytes, Algorithm requested) const;
  /// Why resolve() picks what it picks, for a learner: "44 B <= 32 KiB (recursive doubling up
  /// to RINGDP_RD_MAX_BYTES): recursive_doubling". Host tensors; built from the same decision.
  std::string explain_choice(CollectiveKind kind, size_t bytes, Algorithm requested) const;
  /// The algorithms `kind` may be asked for by name on tensors on `device` in this world.
  AlgorithmSet available(CollectiveKind kind, Device device) const;
  /// Replaces the collective timeout of the calls issued after this one (RINGDP_TIMEOUT still
  /// wins): torch's set_timeout. Waits for the calls issued before it, whose deadlines stay.
  void set_timeout(std::chrono::milliseconds timeout);
  /// Calls `observer` at each step of every later collective, on the thread running it (see
  /// StepObserver); an empty one stops. For teaching and debugging: each call costs a jump.
  void set_step_observer(StepObserver observer);

 private:
  /// `whole_job`: the communicator of every rank, which also checks the job-wide settings.
  Communicator(DiscoveredWorld world, CommOptions options, bool whole_job);
  /// Leaves the job, once: waits for this communicator's calls, tells the peers why and, for the
  /// world's, unless `leaving.failed` or `leaving.process_exit`, waits for them all and frees the
  /// shared windows together (comm/world/departures.h). Run by the destructor or, for a
  /// communicator still alive then, when the process exits (leave_job).
  void leave(const Leaving& leaving);
  /// leave()'s wait for every peer's notice; `exec_lock` holds the execution lock, let go between
  /// looks.
  void await_peers(std::unique_lock<std::mutex>& exec_lock);
  /// Why allocate_shared() cannot be served here, or an empty string.
  std::string shared_refusal() const;
  /// Posts one send or receive; the async form completes it outside the ordered queue.
  /// `source`: a receive from any rank (peer kAnySource) writes its sender there.
  Work point_to_point(CollectiveKind kind, Tensor tensor, int peer, int tag,
                      const CollectiveOptions& requested, int* source = nullptr);
  /// "group #2 of world ranks 0, 1": the second group of those members made by this process.
  static std::string group_label(const std::vector<int>& world_ranks);
  /// Everything behind the front door: the world, its routes, the shared allocations and the
  /// executor (comm/communicator_state.h, which only the files implementing this class include),
  /// so that installing this header installs none of them (docs/library.md).
  struct State;

  CommOptions options_;
  int rank_ = 0, size_ = 1;
  int local_rank_ = 0, local_size_ = 1;
  bool whole_job_ = true;  ///< the world's communicator, not a group
  std::vector<int> world_ranks_;  ///< a group's members as world ranks, in its order; empty for the world
  std::unique_ptr<State> state_;  // last: destroyed first, its queue with it, while the rest is intact
};

}  // namespace ringdp::comm

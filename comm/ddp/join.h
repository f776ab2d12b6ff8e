// Join: training on ranks whose inputs run out at different steps (PyTorch's
// torch.distributed.algorithms.Join with DDP as its joinable). Tested by tests/mpi/test_join.cpp.
//
// The protocol. While a Join is alive, every DDP forward (with gradients enabled) first
// all-reduces two int64 counts, [contributing, syncing]: each rank still training adds
// [1, 1] (or [1, 0] under no_sync). A rank out of inputs calls join() and from then on shadows
// every step of its peers: it adds [0, 0] to that same all-reduce, and when `syncing` is not 0
// it all-reduces zeros for each bucket, in bucket order, then the used-map when
// find_unused_parameters is on: exactly the collectives the others issue, in their order. The
// buckets are summed and divided by `contributing` (not by the world size), so a step's gradient is
// the mean over the ranks that had a batch: N ranks with uneven batches train as one process
// whose step k takes the union of the batches the ranks had at step k. When the all-reduce returns
// contributing = 0, every rank has joined and all leave the loop together.
//
// PyTorch's DDP join hook divides by the initial world size by default
// (divide_by_initial_world_size=True), which shrinks the late steps' gradients; ringdp's divisor is
// what PyTorch does with divide_by_initial_world_size=False.
//
// After the loop every rank takes the parameters of the last rank to join (the highest such rank),
// as PyTorch's join hook does. A joined rank's .grad holds each shadowed step's averaged gradient,
// so JoinOptions::on_shadow_step can run its optimizer step too and keep the optimizer state (e.g.
// momentum) equal on every rank, which PyTorch leaves to each joinable.
#pragma once

#include <cstdint>
#include <functional>

#include "comm/ddp/distributed_data_parallel.h"

namespace ringdp::ddp {

struct JoinOptions {
  /// Called on a joined rank after each shadowed step that synchronised gradients, with .grad
  /// holding that step's averaged gradients: the optimizer step (and zero_grad) goes here.
  std::function<void()> on_shadow_step{};
};

class Join {
 public:
  /// Attaches to `ddp` (one Join at a time): from now on each of its forwards tells the others
  /// this rank is still training.
  explicit Join(DistributedDataParallel& ddp, JoinOptions options = {});
  /// Detaches. Communicates nothing: a rank that leaves without join() (an exception) leaves its
  /// peers waiting until the collective timeout ends the job.
  ~Join();
  Join(const Join&) = delete;
  Join& operator=(const Join&) = delete;

  /// This rank has no more inputs: shadows the peers' steps until every rank has joined, then
  /// takes the last joiner's parameters. Returns the steps shadowed. Called once.
  int64_t join();

  /// The count a training rank's forward contributes while a Join is attached to `ddp`
  /// (DistributedDataParallel::forward calls it).
  static void count_step(DistributedDataParallel& ddp);

 private:
  void sync_final_model(bool last_to_join);

  DistributedDataParallel& ddp_;
  JoinOptions options_;
  bool joined_ = false;
  bool attached_ = false;  // this Join, not a later one, is the Reducer's live Join
};

}  // namespace ringdp::ddp

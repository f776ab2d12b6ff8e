// GradBucket and CommHook: what a DDP communication hook receives and returns (PyTorch's
// dist.GradBucket and register_comm_hook, 1.13). The built-in hooks are in
// comm/ddp/default_hooks.h and comm/ddp/powersgd_hook.h; DistributedDataParallel calls the one
// registered (comm/ddp/reducer.cpp). Tested by tests/mpi/test_comm_hooks.cpp.
//
// Contract: DDP calls the hook once per bucket per synchronised backward, in bucket launch order,
// on the training thread, as soon as the bucket's last gradient is ready (or after backward with
// --no-overlap). `buffer` then holds this rank's local gradient sum, not yet averaged. The hook
// starts whatever collectives it needs and returns a Work; when that Work completes, `buffer`
// must hold the gradient every rank will apply (the average, for the built-ins). DDP waits on
// the Works in bucket order at the end of backward, so a hook may issue further collectives from
// the Work's finishing part (comm::Work::then) as long as it issues them from wait() only: every
// rank then issues them in the same order.
//
// Where PyTorch differs: its hook returns a Future of a tensor that the reducer copies into the
// bucket; here the hook writes the result into `buffer` itself (every PyTorch built-in does the
// same in its last callback). The GradBucket is the hook's for the call only: what the Work's
// finishing part needs it captures by value (Tensors are handles).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/types.h"
#include "comm/work.h"
#include "tensor/tensor.h"

namespace ringdp::ddp {

struct GradBucket {
  int index = 0;  ///< launch order: 0 holds the last layers' gradients
  bool last = false;  ///< the last bucket of this iteration (PyTorch's is_last())
  /// The flat gradients of the bucket's parameters (one dtype, one device); the hook's result
  /// goes here, in place.
  Tensor buffer{};
  /// Views of `buffer` shaped as each parameter, in bucket order (PyTorch's gradients()).
  std::vector<Tensor> gradients{};
  std::vector<Tensor> parameters{};  ///< the parameters, in the same order
  std::vector<std::string> names{};  ///< their names, in the same order
  /// The algorithm DDP was asked for (DdpOptions::algorithm, ringdp-train --algo); the built-in
  /// hooks run their all-reduces with it. Not in PyTorch, whose process group decides.
  comm::Algorithm algorithm = comm::Algorithm::automatic;
  /// Set by the hook: the bytes of the tensors it hands to collectives for this bucket (the
  /// payload, not the wire bytes, which depend on the algorithm). DDP adds them to
  /// DdpStepStats::bytes_reduced.
  int64_t bytes_communicated = 0;

  bool is_last() const { return last; }
};

/// A hook with its state bound (register_comm_hook(state, hook) binds it).
using CommHook = std::function<comm::Work(GradBucket&)>;

}  // namespace ringdp::ddp

// What DistributedDataParallel is told (DdpOptions) and what it reports (DdpEvent as it happens,
// DdpStepStats after each backward): the words shared by the module wrapper
// (comm/ddp/distributed_data_parallel.h), its Reducer (comm/ddp/reducer.h) and whoever narrates a
// step (ringdp-train --explain).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "comm/types.h"

namespace ringdp::ddp {

/// One thing DDP did, as it happened (what ringdp-train --explain narrates).
struct DdpEvent {
  /// unused: find_unused_parameters marked `parameter` ready without a gradient (zeros).
  /// shadow: a joined rank all-reduced zeros for `bucket` (comm/ddp/join.h).
  enum class Kind { hook, launch, unused, shadow };
  Kind kind = Kind::hook;
  double seconds = 0;  ///< since this backward began
  std::string parameter{};  ///< hook: whose gradient arrived
  int bucket = 0;
  int64_t offset = 0;  ///< hook: elements into the bucket
  int64_t elements = 0;  ///< hook: the gradient's; launch: the bucket's
  int64_t bytes = 0;  ///< the gradient's or the bucket's
};

struct DdpOptions {
  double bucket_cap_mb = 25.0;
  double first_bucket_mb = 1.0;
  comm::Algorithm algorithm = comm::Algorithm::automatic;
  /// false: no all-reduce starts before backward has produced every gradient (the DDP paper's
  /// baseline, ringdp-train --no-overlap); they then run back to back.
  bool overlap = true;
  /// false: gradients stay local and no collective runs in backward (every rank's model is still
  /// checked and broadcast from rank 0 at construction); for ZeroRedundancyOptimizer, which
  /// reduce-scatters the gradients in its step (comm/ddp/zero_redundancy_optimizer.h).
  bool sync_gradients = true;
  /// true: parameters the forward's output does not depend on are found after each forward and
  /// take part with zeros (PyTorch's find_unused_parameters); false: such a parameter is an error.
  bool find_unused_parameters = false;
  /// true: each bucket's buffer comes from Communicator::allocate_shared (CPU parameters, every
  /// rank on one host), so its all-reduce reads and writes the peers' buckets directly
  /// (comm/algorithms/all_reduce_shared_direct.cpp) instead of copying through slots. The memory stays until
  /// the communicator is destroyed (docs/library.md, "Shared allocations"): each wrapper built
  /// with it adds its buckets' size for the communicator's life. Ignored in a world of one.
  bool shared_buckets = false;
  /// Called on the training thread at each hook and each bucket launch.
  std::function<void(const DdpEvent&)> on_event{};
};

struct DdpStepStats {
  double backward_seconds = 0;  ///< from backward() start to the end of autograd's backward
  double comm_wait_seconds = 0;  ///< waiting for all-reduces after autograd's backward ended
  double comm_seconds = 0;  ///< first bucket launch to last bucket completion
  double overlap = 0;  ///< share of comm_seconds hidden behind backward (0..1)
  int64_t bytes_reduced = 0;
  int buckets = 0;
};

}  // namespace ringdp::ddp

// What a Communicator holds behind its front door (comm/communicator.h): the world it was made
// from, the routes to its transports, its shared allocations and the executor that runs its calls.
// Only the files that implement Communicator include this header, and it is not installed: a
// program built against the library sees the front door and the public words alone, and an edit
// here recompiles the front door, not every user of it. One pointer hop per call, within the
// noise of the fast path (docs/lab/benchmarks.md, "The front door behind one pointer"): a method
// that uses the state more than once binds `State& state = *state_` first, since each call in
// between would make the compiler load state_ again.
#pragma once

#include <mutex>

#include "comm/communicator.h"
#include "comm/execution/execution.h"
#include "comm/transport/shm/shared_allocations.h"
#include "comm/world/departures.h"
#include "comm/world/discovery.h"
#include "comm/world/routes.h"

namespace ringdp::comm {

struct Communicator::State {
  State(DiscoveredWorld world, const CommOptions& options)
      : world_(std::move(world)),
        shared_slots_(world_.transport->shared_slots()),
        routes_(*world_.transport, options, world_.local_rank),
        executor_(routes_, options, world_.transport->rank(), world_.transport->size(),
                  world_.transport->tag_upper_bound()) {}

  /// The world as algorithm choice sees it; `size` is the Communicator's (read once, so that an
  /// `auto` choice makes no virtual call on the transport).
  Topology topology(int size) const {
    return {.size = size, .hosts = world_.hosts, .shared_slots = shared_slots_ != nullptr};
  }
  /// Runs a described collective (comm/collectives.cpp, comm/block_collectives.cpp): the library
  /// call in place when nothing watches, else the executor's full path.
  template <typename D>
  Work run(const D& collective, const Tensor& input, Tensor& output) {
    return executor_.submit(collective.issue, input, output, collective);
  }

  DiscoveredWorld world_;
  SharedSlots* shared_slots_ = nullptr;  ///< the world transport's, read once: every all_reduce asks
  Routes routes_;
  /// allocate_shared()'s windows, freed by leave() with the slots' (both collective).
  SharedAllocations shared_allocations_;
  std::mutex leave_mutex_;
  bool left_ = false;
  int exit_hook_ = 0;  ///< comm/bootstrap/mpi_runtime.h's handle; 0 without MPI
  Executor executor_;  // last: its queue is destroyed first, so queued calls still find everything above
};

}  // namespace ringdp::comm

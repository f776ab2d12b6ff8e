// Shared-memory slots for a job that no MPI launcher started (torchrun, mp.spawn; issue #51 item
// 3), where MPI's shared windows are not to be had: one POSIX shared-memory segment over every rank
// of the host, which rank 0 creates (after checking /dev/shm's space, as for MPI's windows), every
// rank maps, and rank 0 removes from /dev/shm as soon as every rank has mapped it, so that nothing
// is left there when the job ends, however it ends (a crash, SIGKILL). Its name and every rank's
// success travel through the out-of-band exchange the transport was built from (the store).
// A rank that cannot map it (another /dev/shm: a container of its own on the same kernel) makes
// every rank go without slots, saying so under RINGDP_DEBUG=INFO. Releasing the slots unmaps this
// rank's view only: no rank waits for another to free them. Tested by the torch suite's jobs under
// mp.spawn (the shared-memory all-reduce against gloo) and tests/torch/test_launch.sh (a /dev/shm
// too small, and no segment left behind).
#pragma once

#include <cstddef>
#include <memory>

#include "comm/bootstrap/out_of_band.h"
#include "comm/transport/shm/shared_slots.h"

namespace ringdp::comm {

/// Collective over `oob`'s ranks, which must all run on this host: the slots (slot_bytes each,
/// SharedSlots's contract), or null where some rank could not map the segment. An Error on every
/// rank, giving rank 0's reason, when /dev/shm has too little space or rank 0 cannot create the
/// segment (or take its pages: they are allocated at once, not at first touch).
std::unique_ptr<SharedSlots> segment_slots(OutOfBand& oob, size_t slot_bytes, bool yield_while_waiting);

}  // namespace ringdp::comm

// What both shared-memory all-reduces (comm/algorithms/all_reduce_shared.cpp and
// comm/algorithms/all_reduce_shared_direct.cpp) share: where each rank's chunk begins, and the wait on a
// peer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "comm/algorithms/algorithms.h"
#include "comm/transport/shm/shared_slots.h"

namespace ringdp::comm {

/// Where rank r's chunk of n elements begins: boundaries 64 bytes apart from the buffer's start,
/// so on cache lines when the buffer starts on one (slots and allocations do), and a rank writing
/// its chunk never shares a line with a chunk a peer reads. A view at an odd offset shares one
/// line between two ranks' chunks: slower, not wrong (they write different bytes).
inline int64_t chunk_begin(int64_t n, int N, int r, size_t element) {
  const int64_t line = std::max<int64_t>(1, 64 / static_cast<int64_t>(element));
  return std::min(n, (n * r / N + line - 1) / line * line);
}

/// Polls `done` under the collective's deadline; while peer r is late, looks at what it
/// announced (in this collective by another algorithm, it would never publish). The watchdog's
/// report names r only while it is awaited.
template <typename F>
void wait_for_peer(CollectiveContext& ctx, const SharedSlots& slots, int r, F&& done) {
  if (done()) return;
  ctx.position.waiting_for_rank = r;
  uint32_t polls = 0;
  ctx.transport.poll_until(
      [&] {
        if ((++polls & 1023u) == 0) slots.check_same_call(r);
        return done();
      },
      slots.yield_while_waiting());
  ctx.position.waiting_for_rank = -1;
}

}  // namespace ringdp::comm

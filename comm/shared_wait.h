// The wait both shared-memory all-reduces (comm/all_reduce_shared.cpp and
// comm/all_reduce_shared_direct.cpp) make on a peer: poll `done` under the collective's deadline,
// and, while the peer is late, look at what it announced: in this collective by another algorithm,
// it would never publish. The watchdog's report names the peer only while it is awaited.
#pragma once

#include <cstdint>

#include "comm/algorithms.h"
#include "comm/shared_slots.h"

namespace ringdp::comm {

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

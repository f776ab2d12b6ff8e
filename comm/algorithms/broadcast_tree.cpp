// Binomial-tree broadcast, the reduce tree run backwards: with the root as virtual rank 0,
// a rank receives from vrank − lowbit(vrank), then sends to vrank + m for each power of two m
// below its lowest set bit (largest first), so the informed set doubles every round.
//   N = 5, root 0:  round 1: 0→4   round 2: 0→2   round 3: 0→1, 2→3
// ⌈log2 N⌉ rounds of the whole message: latency-optimal; large messages take the pipelined
// chain instead (comm/algorithms/broadcast_chain.cpp; `auto` from RINGDP_CHAIN_MIN_BYTES).
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

void broadcast_tree(CollectiveContext& ctx, void* buf, int64_t count, int root) {
  const int N = ctx.size(), r = ctx.rank();
  if (N == 1 || count == 0) return;
  const int vrank = (r - root + N) % N;
  int steps = 0;
  for (int m = 1; m < N; m <<= 1) ++steps;
  int mask = 1;
  while (mask < N && !(vrank & mask)) mask <<= 1;
  int step = 0;
  if (vrank != 0) {
    const int parent = (vrank - mask + root) % N;
    for (int m = 1; m < mask; m <<= 1) ++step;
    ctx.enter_step(++step, steps, Phase::receive, -1, -1, parent, -1, "store");
    exchange_segmented(ctx, -1, nullptr, 0, parent, buf, count, [](int64_t, int64_t) {});
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vrank + mask >= N) continue;
    const int child = (vrank + mask + root) % N;
    ctx.enter_step(++step, steps, Phase::forward, child, -1, -1, -1, "");
    exchange_segmented(ctx, child, buf, count, -1, nullptr, 0, [](int64_t, int64_t) {});
  }
}

}  // namespace ringdp::comm

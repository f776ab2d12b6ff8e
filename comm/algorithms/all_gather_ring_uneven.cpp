// Ring all-gather over uneven blocks (all_gather with counts): the even ring's steps
// (comm/algorithms/all_gather_ring.cpp), each block of its own length. In step s rank r sends block
// (r−s+1) mod N to its right neighbour and receives block (r−s) mod N from its left one,
// straight into the output at that block's offset.
//   N = 3, counts 2,0,3:  s=1  r0: b0(2)→r1  r1: b1(0)→r2  r2: b2(3)→r0
//                         s=2  r0: b2(3)→r1  r1: b0(2)→r2  r2: b1(0)→r0
// N−1 steps; a step lasts as long as its longest block, so the ring pays for unevenness. Empty
// blocks still travel as messages of no bytes (exchange_blocks): a rank whose counts differ
// from its neighbour's is stopped at the step where they differ.
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

void all_gather_ring_uneven(CollectiveContext& ctx, const void* input, void* out,
                            std::span<const int64_t> counts, std::span<const int64_t> offsets) {
  const int N = ctx.size(), r = ctx.rank();
  ctx.transport.copy(ctx.at(out, offsets[r]), input, counts[r] * ctx.element_bytes());
  const int right = (r + 1) % N, left = (r - 1 + N) % N;
  for (int s = 1; s < N; ++s) {
    const int send_block = (r - s + 1 + N) % N, recv_block = (r - s + N) % N;
    ctx.enter_step(s, N - 1, Phase::all_gather, right, send_block, left, recv_block, "store");
    exchange_blocks(ctx, right, ctx.at(out, offsets[send_block]), counts[send_block], left,
                    ctx.at(out, offsets[recv_block]), counts[recv_block]);
  }
}

}  // namespace ringdp::comm

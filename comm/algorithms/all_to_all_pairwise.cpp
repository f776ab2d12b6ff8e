// Pairwise all-to-all: the own block is a local copy, then N−1 steps; in step k rank r sends its
// block for rank (r+k) mod N there and receives rank (r−k) mod N's block for it.
//   N = 3:  k=1  r0: b01→r1  r1: b12→r2  r2: b20→r0   (bij: rank i's block for rank j)
//           k=2  r0: b02→r2  r1: b10→r0  r2: b21→r1
// Every step pairs each rank with one sender and one receiver, so no rank is a hot spot, and each
// block travels once, straight from the input into its place in the output. Blocks of the uneven
// form may differ in length (counts and offsets in the BlockExchange); each travels as a message
// even when empty, so a peer whose count differs from what this rank expects is an error at that
// step (exchange_blocks).
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

void all_to_all_pairwise(CollectiveContext& ctx, const BlockExchange& blocks, bool even) {
  const int N = ctx.size(), r = ctx.rank();
  const auto& send_counts = blocks.send_counts;
  const auto& recv_counts = blocks.recv_counts;
  ctx.transport.copy(ctx.at(blocks.output, blocks.recv_offsets[r]),
                     ctx.at(blocks.input, blocks.send_offsets[r]), recv_counts[r] * ctx.element_bytes());
  if (even && send_counts[r] == 0) return;
  for (int k = 1; k < N; ++k) {
    const int to = (r + k) % N, from = (r - k + N) % N;
    ctx.enter_step(k, N - 1, Phase::exchange, to, to, from, from, "store");
    const void* send = ctx.at(blocks.input, blocks.send_offsets[to]);
    void* recv = ctx.at(blocks.output, blocks.recv_offsets[from]);
    if (even)
      exchange_segmented(ctx, to, send, send_counts[to], from, recv, recv_counts[from],
                         [](int64_t, int64_t) {});
    else
      exchange_blocks(ctx, to, send, send_counts[to], from, recv, recv_counts[from]);
  }
}

}  // namespace ringdp::comm

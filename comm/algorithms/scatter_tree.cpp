// Binomial-tree scatter, the gather tree run backwards (and the broadcast tree's shape): with the
// root as virtual rank 0, a vrank v receives the blocks of its subtree, vranks [v, v + span), from
// v − lowbit(v), then hands each child v + m (m a power of two below lowbit(v), largest first)
// the blocks of the child's subtree, and keeps block v.
//   N = 5, root 0:  round 1: 0→4 (b4)   round 2: 0→2 (b2 b3)   round 3: 0→1 (b1), 2→3 (b3)
// ⌈log2 N⌉ rounds. The root sends from its input when it is rank 0 (vrank order is rank order),
// else from scratch slot 0 holding the input turned into vrank order (two copies); inner ranks
// receive into scratch slot 0, a leaf straight into its output.
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

void scatter_tree(CollectiveContext& ctx, const void* input, void* out, int64_t block_count, int root) {
  const int N = ctx.size(), r = ctx.rank();
  const size_t block_bytes = block_count * ctx.element_bytes();
  if (N == 1 || block_count == 0) {
    if (r == root) ctx.transport.copy(out, ctx.at(input, r * block_count), block_bytes);
    return;
  }
  const int vrank = (r - root + N) % N;
  int steps = 0;
  for (int m = 1; m < N; m <<= 1) ++steps;
  int mask = 1;
  while (mask < N && !(vrank & mask)) mask <<= 1;
  const int span = std::min(mask, N - vrank);  // the root's mask is past N: its span is the world
  const void* held = input;  // the blocks of vranks [vrank, vrank + span)
  int step = 0;
  if (vrank == 0 && root != 0) {
    void* rotated = ctx.transport.scratch(0, N * block_bytes);
    ctx.transport.copy(rotated, ctx.at(input, root * block_count), (N - root) * block_bytes);
    ctx.transport.copy(ctx.at(rotated, (N - root) * block_count), input, root * block_bytes);
    held = rotated;
  } else if (vrank != 0) {
    const int parent = (vrank - mask + root) % N;
    void* incoming = span == 1 ? out : ctx.transport.scratch(0, span * block_bytes);
    for (int m = 1; m < mask; m <<= 1) ++step;
    ctx.enter_step(++step, steps, Phase::receive, -1, -1, parent, -1, "store");
    exchange_segmented(ctx, -1, nullptr, 0, parent, incoming, span * block_count, [](int64_t, int64_t) {});
    held = incoming;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vrank + mask >= N) continue;
    const int child = (vrank + mask + root) % N;
    const int child_blocks = std::min(mask, N - vrank - mask);
    ctx.enter_step(++step, steps, Phase::forward, child, -1, -1, -1, "");
    exchange_segmented(ctx, child, ctx.at(held, mask * block_count), child_blocks * block_count, -1, nullptr,
                       0, [](int64_t, int64_t) {});
  }
  ctx.transport.copy(out, held, block_bytes);  // block vrank, first of what this rank held
}

}  // namespace ringdp::comm

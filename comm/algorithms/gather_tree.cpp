// Binomial-tree gather, the reduce tree without the reduction: with the root as virtual rank 0,
// every rank holds the blocks of its subtree, vranks [v, v + span), in vrank order. In round k
// (mask = 2^k) a vrank with bit k set sends all it holds to vrank − mask and is done; one with
// bit k clear receives the subtree of vrank + mask (if it exists) right after its own.
//   N = 5, root 0:  k=0: 1→0 (b1), 3→2 (b3)   k=1: 2→0 (b2 b3)   k=2: 4→0 (b4)
//   N = 3, root 1:  vranks 0,1,2 are ranks 1,2,0;  k=0: v1→v0 (b2)   k=1: v2→v0 (b0)
// ⌈log2 N⌉ rounds; the root receives N−1 blocks, each other block travels once per round it
// climbs (log2 N times at most). A leaf sends its input as it is; inner ranks collect in scratch
// slot 0; the root collects straight into its output when it is rank 0, else in scratch, then
// turns vrank order into rank order with two copies: vranks [0, N−root) are ranks [root, N).
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

void gather_tree(CollectiveContext& ctx, const void* input, void* out, int64_t block_count, int root) {
  const int N = ctx.size(), r = ctx.rank();
  const size_t block_bytes = block_count * ctx.element_bytes();
  if (r == root) ctx.transport.copy(ctx.at(out, r * block_count), input, block_bytes);
  if (N == 1 || block_count == 0) return;
  const int vrank = (r - root + N) % N;
  int steps = 0;
  for (int m = 1; m < N; m <<= 1) ++steps;
  const void* held = input;  // the blocks of vranks [vrank, vrank + blocks), what goes up
  void* collected = nullptr;  // where they are collected, once a child sends any
  int blocks = 1, step = 0;
  for (int mask = 1; mask < N; mask <<= 1) {
    ++step;
    if (vrank & mask) {
      const int parent = (vrank - mask + root) % N;
      ctx.enter_step(step, steps, Phase::send_up, parent, -1, -1, -1, "");
      exchange_segmented(ctx, parent, held, blocks * block_count, -1, nullptr, 0, [](int64_t, int64_t) {});
      return;
    }
    if (vrank + mask >= N) continue;
    if (!collected) {
      const int span = [&] {  // the root's subtree is the world; an inner rank's its lowest bit
        int low = 1;
        while (low < N && !(vrank & low)) low <<= 1;
        return std::min(low, N - vrank);
      }();
      collected = root == 0 && r == 0 ? out : ctx.transport.scratch(0, span * block_bytes);
      ctx.transport.copy(collected, input, block_bytes);
      held = collected;
    }
    const int child = (vrank + mask + root) % N;
    const int child_blocks = std::min(mask, N - vrank - mask);
    ctx.enter_step(step, steps, Phase::gather, -1, -1, child, -1, "store");
    exchange_segmented(ctx, -1, nullptr, 0, child, ctx.at(collected, mask * block_count),
                       child_blocks * block_count, [](int64_t, int64_t) {});
    blocks = mask + child_blocks;
  }
  if (collected == out) return;  // root 0: vrank order is rank order
  // The root, N > 1: vranks [0, N − root) are ranks [root, N), the rest ranks [0, root).
  ctx.transport.copy(ctx.at(out, root * block_count), collected, (N - root) * block_bytes);
  ctx.transport.copy(out, ctx.at(collected, (N - root) * block_count), root * block_bytes);
}

}  // namespace ringdp::comm

// Binomial-tree reduce: ⌈log2 N⌉ rounds, ranks renumbered so the root is virtual rank 0.
// In round k (mask = 2^k) a virtual rank with bit k set sends its partial result to
// vrank − mask and is done; one with bit k clear receives from vrank + mask (if it exists)
// and reduces that partial into its own.
//   N = 5, root 0:  k=0: 1→0, 3→2   k=1: 2→0   k=2: 4→0
// The input is never modified: the root accumulates in `out`, inner ranks in scratch slot 1,
// leaves send their input as it is. Partials always combine as (lower vranks) op (higher vranks).
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

void reduce_tree(CollectiveContext& ctx, const void* input, void* out, int64_t count, int root) {
  const int N = ctx.size(), r = ctx.rank();
  const size_t bytes = count * ctx.element_bytes();
  if (r == root) ctx.transport.copy(out, input, bytes);
  if (N == 1 || count == 0) return;
  const int vrank = (r - root + N) % N;
  int steps = 0;
  for (int m = 1; m < N; m <<= 1) ++steps;
  const void* partial = input;  // what this rank will send up
  void* accumulator = r == root ? out : nullptr;
  void* incoming = ctx.transport.scratch(0, bytes);
  int step = 0;
  for (int mask = 1; mask < N; mask <<= 1) {
    ++step;
    if (vrank & mask) {
      const int parent = (vrank - mask + root) % N;
      ctx.enter_step(step, steps, Phase::send_up, parent, -1, -1, -1, "");
      exchange_segmented(ctx, parent, partial, count, -1, nullptr, 0, [](int64_t, int64_t) {});
      return;
    }
    if (vrank + mask >= N) continue;
    const int child = (vrank + mask + root) % N;
    if (!accumulator) {
      accumulator = ctx.transport.scratch(1, bytes);
      ctx.transport.copy(accumulator, input, bytes);
      partial = accumulator;
    }
    ctx.enter_step(step, steps, Phase::gather, -1, -1, child, -1, "reduce");
    exchange_segmented(ctx, -1, nullptr, 0, child, incoming, count, [&](int64_t off, int64_t len) {
      ctx.transport.reduce_into(ctx.at(accumulator, off), ctx.at(incoming, off), len, ctx.dtype, ctx.op);
    });
  }
}

}  // namespace ringdp::comm

// Recursive-doubling all-reduce: log2(P) rounds in which each rank exchanges its whole buffer
// with the partner whose (renumbered) rank differs in one bit, for P the largest power of two
// ≤ N. Latency-optimal (log2 P messages) but every round moves the whole buffer, so it wins
// only for small messages; `auto` picks it there.
//
// Non-powers of two (the fold-in): with E = N − P extra ranks, ranks 0..2E−1 pair up first:
// even rank 2i sends its buffer to 2i+1 and sits out; 2i+1 continues as rank i. Ranks ≥ 2E
// continue as rank − E. At the end each odd rank sends the result back to its even partner.
//   N = 6 (P = 4, E = 2):  fold: 0→1, 2→3   rounds on {1,3,4,5} as {0,1,2,3}:
//   mask 1: (0,1) (2,3)   mask 2: (0,2) (1,3)   unfold: 1→0, 3→2
// Bit-identical results: both partners of a round combine the same two values, and every
// reduce_into op is commutative bit for bit (kernels/reduce_into.h), so they get the same bits.
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

void all_reduce_recursive_doubling(CollectiveContext& ctx, void* buf, int64_t count) {
  const int N = ctx.size();
  if (N == 1 || count == 0) return;
  const size_t bytes = count * ctx.element_bytes();
  const PowerOfTwoFold fold(N, ctx.rank());
  const int steps = fold.rounds + fold.fold_steps();
  int step = 0;
  if (!fold.fold_in(ctx, buf, count, step, steps)) return;
  void* incoming = ctx.transport.scratch(0, bytes);
  for (int mask = 1; mask < fold.P; mask <<= 1) {
    const int partner = fold.real_rank(fold.vrank ^ mask);
    ctx.enter_step(++step, steps, Phase::exchange, partner, -1, partner, -1, "reduce");
    ctx.requests.clear();
    ctx.requests.push_back(ctx.transport.irecv(partner, incoming, bytes, ctx.tag));
    ctx.requests.push_back(ctx.transport.isend(partner, buf, bytes, ctx.tag));
    ctx.transport.wait_all(ctx.requests);
    ctx.transport.reduce_into(buf, incoming, count, ctx.dtype, ctx.op);
  }
  fold.unfold(ctx, buf, count, steps);
}

}  // namespace ringdp::comm

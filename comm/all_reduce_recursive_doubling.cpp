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
#include "comm/algorithms.h"

namespace ringdp::comm {

void all_reduce_recursive_doubling(CollectiveContext& ctx, void* buf, int64_t count) {
  const int N = ctx.size(), r = ctx.rank();
  if (N == 1 || count == 0) return;
  const size_t bytes = count * ctx.element_bytes();
  int P = 1;
  while (P * 2 <= N) P *= 2;
  const int extra = N - P;
  int rounds = 0;
  for (int m = 1; m < P; m <<= 1) ++rounds;
  const int steps = rounds + (extra ? 2 : 0);
  int step = 0;
  void* incoming = ctx.transport.scratch(0, bytes);

  // Fold-in: the even rank of each extra pair hands its data over and waits for the result.
  int vrank;
  if (r < 2 * extra) {
    if (r % 2 == 0) {
      ctx.enter_step(++step, steps, "fold-in", r + 1, -1, -1, -1, "");
      Request sent = ctx.transport.isend(r + 1, buf, bytes, ctx.tag);
      ctx.transport.wait(sent);
      ctx.enter_step(steps, steps, "unfold", -1, -1, r + 1, -1, "store");
      Request got = ctx.transport.irecv(r + 1, buf, bytes, ctx.tag);
      ctx.transport.wait(got);
      return;
    }
    ctx.enter_step(++step, steps, "fold-in", -1, -1, r - 1, -1, "reduce");
    Request got = ctx.transport.irecv(r - 1, incoming, bytes, ctx.tag);
    ctx.transport.wait(got);
    ctx.transport.reduce_into(buf, incoming, count, ctx.dtype, ctx.op);
    vrank = r / 2;
  } else {
    vrank = r - extra;
  }
  auto real_rank = [extra](int v) { return v < extra ? 2 * v + 1 : v + extra; };

  for (int mask = 1; mask < P; mask <<= 1) {
    const int partner = real_rank(vrank ^ mask);
    ctx.enter_step(++step, steps, "exchange", partner, -1, partner, -1, "reduce");
    ctx.requests.clear();
    ctx.requests.push_back(ctx.transport.irecv(partner, incoming, bytes, ctx.tag));
    ctx.requests.push_back(ctx.transport.isend(partner, buf, bytes, ctx.tag));
    ctx.transport.wait_all(ctx.requests);
    ctx.transport.reduce_into(buf, incoming, count, ctx.dtype, ctx.op);
  }

  if (r < 2 * extra) {  // odd rank of an extra pair: give the result back
    ctx.enter_step(steps, steps, "unfold", r - 1, -1, -1, -1, "");
    Request sent = ctx.transport.isend(r - 1, buf, bytes, ctx.tag);
    ctx.transport.wait(sent);
  }
}

}  // namespace ringdp::comm

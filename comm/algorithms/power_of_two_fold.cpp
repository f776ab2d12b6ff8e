// Implements PowerOfTwoFold (comm/algorithms/algorithms.h): recursive doubling's and Rabenseifner's way of
// running on N ranks that are not a power of two. Tested through both algorithms' matrices in
// tests/mpi/test_collectives.cpp (3 ranks; 5 and 6 by hand).
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

PowerOfTwoFold::PowerOfTwoFold(int N, int r) {
  while (P * 2 <= N) {
    P *= 2;
    ++rounds;
  }
  extra = N - P;
  rank = r;
  vrank = r < 2 * extra ? (r % 2 == 0 ? -1 : r / 2) : r - extra;
}

bool PowerOfTwoFold::fold_in(CollectiveContext& ctx, void* buf, int64_t count, int& step, int steps) const {
  const size_t bytes = count * ctx.element_bytes();
  if (rank >= 2 * extra) {
    // Not in a pair, yet the fold-in is a step of the collective: count it, so this rank's
    // rounds carry the same numbers as its partners' in traces, reports and --explain.
    step += fold_steps() / 2;
    return true;
  }
  if (rank % 2 == 0) {  // hand the buffer over, wait for the result
    ctx.enter_step(++step, steps, Phase::fold_in, rank + 1, -1, -1, -1, "");
    Request sent = ctx.transport.isend(rank + 1, buf, bytes, ctx.tag);
    ctx.transport.wait(sent);
    ctx.enter_step(steps, steps, Phase::unfold, -1, -1, rank + 1, -1, "store");
    Request got = ctx.transport.irecv(rank + 1, buf, bytes, ctx.tag);
    ctx.transport.wait(got);
    return false;
  }
  void* incoming = ctx.transport.scratch(0, bytes);
  ctx.enter_step(++step, steps, Phase::fold_in, -1, -1, rank - 1, -1, "reduce");
  Request got = ctx.transport.irecv(rank - 1, incoming, bytes, ctx.tag);
  ctx.transport.wait(got);
  ctx.transport.reduce_into(buf, incoming, count, ctx.dtype, ctx.op);
  return true;
}

void PowerOfTwoFold::unfold(CollectiveContext& ctx, const void* buf, int64_t count, int steps) const {
  if (rank >= 2 * extra) return;  // (the even ranks received theirs in fold_in)
  ctx.enter_step(steps, steps, Phase::unfold, rank - 1, -1, -1, -1, "");
  Request sent = ctx.transport.isend(rank - 1, buf, count * ctx.element_bytes(), ctx.tag);
  ctx.transport.wait(sent);
}

}  // namespace ringdp::comm

// Rabenseifner's all-reduce: a reduce-scatter by recursive halving, then an all-gather by
// recursive doubling, over P = the largest power of two ≤ N ranks. Each rank sends and receives
// 2·(P−1)/P of the buffer in all, as the ring does, but in 2·log2(P) messages instead of
// 2·(N−1): the ring's bandwidth with recursive doubling's latency, which is why MPI libraries
// use it for mid-size messages (where ringdp's auto does: docs/benchmarks.md).
//
// Reduce-scatter: round k (mask P/2, P/4, ..., 1) splits the range both partners still share
// in two; the rank whose bit is 0 keeps the lower half, the other the upper; each sends the half
// it gives up and adds the partner's copy of the half it keeps. After log2(P) rounds each rank
// owns 1/P of the buffer, complete. All-gather: the same rounds in reverse order, each partner
// sending the range it owns and storing the partner's beside it, so ranges double back to the
// whole buffer. Every element is reduced on one rank only and copied from there: all ranks end
// with the same bits.
//
// Non-powers of two: the fold-in and unfold of comm/algorithms/all_reduce_recursive_doubling.cpp (the
// even rank of each of the first N − P pairs hands its buffer to the odd one and receives the
// result at the end), two extra messages of the whole buffer for those ranks.
//   N = 4, count 8:  mask 2: 0↔2, 1↔3 (0,1 keep [0,4); 2,3 keep [4,8))
//                    mask 1: 0↔1 (0 keeps [0,2), 1 [2,4)), 2↔3 (2 keeps [4,6), 3 [6,8))
//                    then mask 1 and mask 2 again, exchanging what each holds.
#include <array>

#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

void all_reduce_rabenseifner(CollectiveContext& ctx, void* buf, int64_t count) {
  const int N = ctx.size();
  if (N == 1 || count == 0) return;
  const size_t element = ctx.element_bytes();
  const PowerOfTwoFold fold(N, ctx.rank());
  const int steps = 2 * fold.rounds + fold.fold_steps();
  int step = 0;
  if (!fold.fold_in(ctx, buf, count, step, steps)) return;

  // The range each round started from, to walk the all-gather back up (log2 P ≤ 31 rounds); its
  // split point and the half kept follow from it and the round's bit of vrank.
  std::array<int64_t, 32> lows{}, highs{};
  int64_t lo = 0, hi = count;
  void* incoming = ctx.transport.scratch(0, static_cast<size_t>((count + 1) / 2) * element);
  for (int k = 0, mask = fold.P / 2; mask >= 1; mask /= 2, ++k) {
    lows[k] = lo;
    highs[k] = hi;
    const int64_t mid = lo + (hi - lo) / 2;
    const bool lower = (fold.vrank & mask) == 0;
    const int64_t keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
    const int64_t give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
    const int partner = fold.real_rank(fold.vrank ^ mask);
    ctx.enter_step(++step, steps, Phase::reduce_scatter, partner, -1, partner, -1, "reduce");
    ctx.requests.clear();
    ctx.requests.push_back(ctx.transport.irecv(partner, incoming, (keep_hi - keep_lo) * element, ctx.tag));
    ctx.requests.push_back(
        ctx.transport.isend(partner, ctx.at(buf, give_lo), (give_hi - give_lo) * element, ctx.tag));
    ctx.transport.wait_all(ctx.requests);
    ctx.transport.reduce_into(ctx.at(buf, keep_lo), incoming, keep_hi - keep_lo, ctx.dtype, ctx.op);
    lo = keep_lo;
    hi = keep_hi;
  }
  ctx.scale_completed(ctx.at(buf, lo), hi - lo);  // avg: the owner divides its range, once
  for (int k = fold.rounds - 1, mask = 1; mask < fold.P; mask *= 2, --k) {
    // Before round k both partners shared [lows[k], highs[k]); each now owns one half of it.
    const int64_t mid = lows[k] + (highs[k] - lows[k]) / 2;
    const bool lower = (fold.vrank & mask) == 0;
    const int64_t other_lo = lower ? mid : lows[k], other_hi = lower ? highs[k] : mid;
    const int partner = fold.real_rank(fold.vrank ^ mask);
    ctx.enter_step(++step, steps, Phase::all_gather, partner, -1, partner, -1, "store");
    ctx.requests.clear();
    ctx.requests.push_back(
        ctx.transport.irecv(partner, ctx.at(buf, other_lo), (other_hi - other_lo) * element, ctx.tag));
    ctx.requests.push_back(ctx.transport.isend(partner, ctx.at(buf, lo), (hi - lo) * element, ctx.tag));
    ctx.transport.wait_all(ctx.requests);
    lo = lows[k];
    hi = highs[k];
  }

  fold.unfold(ctx, buf, count, steps);
}

}  // namespace ringdp::comm

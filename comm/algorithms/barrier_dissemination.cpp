// Dissemination barrier: ⌈log2 N⌉ rounds; in round k rank r signals (r + 2^k) mod N and waits
// for (r − 2^k) mod N with zero-byte messages. After round k every rank has heard, directly or
// through others, from the 2^(k+1) − 1 ranks before it, so after the last round from all.
//   N = 5:  k=0: r→r+1   k=1: r→r+2   k=2: r→r+4
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

void barrier_dissemination(CollectiveContext& ctx) {
  const int N = ctx.size(), r = ctx.rank();
  int steps = 0;
  for (int d = 1; d < N; d <<= 1) ++steps;
  int step = 0;
  for (int distance = 1; distance < N; distance <<= 1) {
    const int to = (r + distance) % N, from = (r - distance + N) % N;
    ctx.enter_step(++step, steps, Phase::signal, to, -1, from, -1, "wait");
    ctx.requests.clear();
    ctx.requests.push_back(ctx.transport.irecv(from, nullptr, 0, ctx.tag));
    ctx.requests.push_back(ctx.transport.isend(to, nullptr, 0, ctx.tag));
    ctx.transport.wait_all(ctx.requests);
  }
}

}  // namespace ringdp::comm

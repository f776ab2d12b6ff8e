// Pipelined chain broadcast, for large messages: the ranks form a chain starting at the root
// (virtual rank v = (r − root) mod N, v sends to v+1), the buffer travels as segments, and a rank
// forwards segment k as soon as it has arrived, while segment k+1 is still on its way. Time is
// about (N − 1 + S − 1) segment transfers for S segments, against the binomial tree's
// ⌈log2 N⌉ whole-buffer transfers: the chain wins once S is large.
//   N = 4, 3 segments:   t1: 0→1 s0   t2: 0→1 s1, 1→2 s0   t3: 0→1 s2, 1→2 s1, 2→3 s0   ...
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

void broadcast_chain(CollectiveContext& ctx, void* buf, int64_t count, int root) {
  const int N = ctx.size(), r = ctx.rank();
  if (N == 1 || count == 0) return;
  const int vrank = (r - root + N) % N;
  const int previous = vrank > 0 ? (r + N - 1) % N : -1;
  const int next = vrank < N - 1 ? (r + 1) % N : -1;
  const int64_t seg = ctx.segment_elements();
  const int64_t segments = (count + seg - 1) / seg;
  const size_t eb = ctx.element_bytes();
  auto& requests = ctx.requests;
  requests.clear();
  ctx.enter_step(1, 1, Phase::chain, next, -1, previous, -1, "forward");
  if (previous >= 0) {
    for (int64_t k = 0; k < segments; ++k)
      requests.push_back(
          ctx.transport.irecv(previous, ctx.at(buf, k * seg), std::min(seg, count - k * seg) * eb, ctx.tag));
  }
  for (int64_t k = 0; k < segments; ++k) {
    if (previous >= 0) ctx.transport.wait(requests[k]);
    if (next >= 0)
      requests.push_back(
          ctx.transport.isend(next, ctx.at(buf, k * seg), std::min(seg, count - k * seg) * eb, ctx.tag));
  }
  const size_t sends_from = previous >= 0 ? static_cast<size_t>(segments) : 0;
  ctx.transport.wait_all(std::span<Request>(requests).subspan(sends_from));
}

}  // namespace ringdp::comm

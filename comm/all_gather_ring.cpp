// Ring all-gather: N−1 steps; in step s rank r sends chunk (r−s) mod N to its right
// neighbour and receives chunk (r−s−1) mod N from its left one, straight into the output.
//   N = 3:  s=1  r0: c0→r1  r1: c1→r2  r2: c2→r0
//           s=2  r0: c2→r1  r1: c0→r2  r2: c1→r0
// Each rank sends (N−1)/N of the output: bandwidth-optimal. No scratch, no copies beyond
// placing the rank's own input (skipped when the input already is that chunk of the output).
#include "comm/algorithms.h"

namespace ringdp::comm {

void all_gather_ring(CollectiveContext& ctx, const void* input, void* out, int64_t chunk_count) {
  const int N = ctx.size(), r = ctx.rank();
  ctx.transport.copy(ctx.at(out, r * chunk_count), input, chunk_count * ctx.element_bytes());
  if (N == 1 || chunk_count == 0) return;
  const int right = (r + 1) % N, left = (r + N - 1) % N;
  for (int s = 0; s < N - 1; ++s) {
    const int send_chunk = ((r - s) % N + N) % N;
    const int recv_chunk = ((r - s - 1) % N + N) % N;
    ctx.enter_step(s + 1, N - 1, "all-gather", right, send_chunk, left, recv_chunk, "store");
    exchange_segmented(ctx, right, ctx.at(out, send_chunk * chunk_count), chunk_count, left,
                       ctx.at(out, recv_chunk * chunk_count), chunk_count, [](int64_t, int64_t) {});
  }
}

}  // namespace ringdp::comm

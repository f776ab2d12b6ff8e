// Ring all-gather: N−1 steps; in step s rank r sends chunk (r−s) mod N to its right
// neighbour and receives chunk (r−s−1) mod N from its left one, straight into the output.
//   N = 3:  s=1  r0: c0→r1  r1: c1→r2  r2: c2→r0
//           s=2  r0: c2→r1  r1: c0→r2  r2: c1→r0
// Each rank sends (N−1)/N of the output: bandwidth-optimal. No scratch, no copies beyond
// placing the rank's own input (skipped when the input already is that chunk of the output).
// The steps are ring_all_gather_phase's, written once in comm/algorithms/all_reduce_ring.cpp.
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

void all_gather_ring(CollectiveContext& ctx, const void* input, void* out, int64_t chunk_count) {
  const int N = ctx.size(), r = ctx.rank();
  ctx.transport.copy(ctx.at(out, r * chunk_count), input, chunk_count * ctx.element_bytes());
  if (N == 1 || chunk_count == 0) return;
  // The all-reduce's all-gather (comm/algorithms/all_reduce_ring.cpp) on N equal chunks, each rank starting
  // from chunk r rather than r + 1.
  ring_all_gather_phase(ctx, out, ChunkLayout{N * chunk_count, N}, r, 1, N - 1);
}

}  // namespace ringdp::comm

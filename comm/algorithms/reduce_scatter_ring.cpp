// Ring reduce-scatter with travelling partials: N−1 steps. In step s rank r sends its partial
// of chunk (r−s−1) mod N to the right and receives the left neighbour's partial of chunk
// (r−s−2) mod N, into which it reduces its own input chunk. At step 0 the "partial" sent is the
// input chunk itself; the last chunk to arrive is chunk r, which becomes the output.
//   N = 3:  s=1  r0 sends in[c2]           r1 sends in[c0]           r2 sends in[c1]
//           s=2  r0 sends in[c1]+in[c0]... each rank ends with its own chunk fully reduced.
// Partials alternate between scratch slots 0 and 1 (send one while receiving the other), so
// the input is never written and nothing is copied except when the output overlaps it.
// The steps are ring_reduce_scatter_phase's, written once in comm/algorithms/all_reduce_ring.cpp.
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

void reduce_scatter_ring(CollectiveContext& ctx, const void* input, void* out, int64_t chunk_count) {
  const int N = ctx.size(), r = ctx.rank();
  if (N == 1 || chunk_count == 0) {
    ctx.transport.copy(out, ctx.at(input, r * chunk_count), chunk_count * ctx.element_bytes());
    return;
  }
  // The all-reduce's reduce-scatter (comm/algorithms/all_reduce_ring.cpp) on N equal chunks, ending on chunk
  // r rather than r + 1, with only that chunk for an output.
  ring_reduce_scatter_phase(ctx, input, out, RingOut::owned_chunk, ChunkLayout{N * chunk_count, N}, r, 1,
                            N - 1);
}

}  // namespace ringdp::comm

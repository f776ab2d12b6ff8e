// Ring reduce-scatter with travelling partials: N−1 steps. In step s rank r sends its partial
// of chunk (r−s−1) mod N to the right and receives the left neighbour's partial of chunk
// (r−s−2) mod N, into which it reduces its own input chunk. At step 0 the "partial" sent is the
// input chunk itself; the last chunk to arrive is chunk r, which becomes the output.
//   N = 3:  s=1  r0 sends in[c2]           r1 sends in[c0]           r2 sends in[c1]
//           s=2  r0 sends in[c1]+in[c0]... each rank ends with its own chunk fully reduced.
// Partials alternate between scratch slots 0 and 1 (send one while receiving the other), so
// the input is never written and nothing is copied except when the output overlaps it.
#include "comm/algorithms.h"

namespace ringdp::comm {

void reduce_scatter_ring(CollectiveContext& ctx, const void* input, void* out, int64_t chunk_count) {
  const int N = ctx.size(), r = ctx.rank();
  const size_t chunk_bytes = chunk_count * ctx.element_bytes();
  auto input_chunk = [&](int c) { return ctx.at(input, c * chunk_count); };
  if (N == 1 || chunk_count == 0) {
    ctx.transport.copy(out, input_chunk(r), chunk_bytes);
    return;
  }
  const int right = (r + 1) % N, left = (r + N - 1) % N;
  void* partials[2] = {ctx.transport.scratch(0, chunk_bytes), ctx.transport.scratch(1, chunk_bytes)};
  const char* in_begin = static_cast<const char*>(input);
  const char* out_begin = static_cast<const char*>(out);
  const bool out_overlaps_input =
      out_begin < in_begin + N * chunk_bytes && in_begin < out_begin + chunk_bytes;
  const void* sending = input_chunk((r + N - 1) % N);
  for (int s = 0; s < N - 1; ++s) {
    const int send_chunk = ((r - s - 1) % N + N) % N;
    const int recv_chunk = ((r - s - 2) % N + N) % N;
    const bool last = s == N - 2;
    void* landing = (last && !out_overlaps_input) ? out : partials[s % 2];
    ctx.enter_step(s + 1, N - 1, "reduce-scatter", right, send_chunk, left, recv_chunk, "reduce");
    const char* mine = input_chunk(recv_chunk);
    exchange_segmented(
        ctx, right, sending, chunk_count, left, landing, chunk_count, [&](int64_t off, int64_t len) {
          ctx.transport.reduce_into(ctx.at(landing, off), ctx.at(mine, off), len, ctx.dtype, ctx.op);
        });
    sending = landing;
    if (last && landing != out) ctx.transport.copy(out, landing, chunk_bytes);
  }
}

}  // namespace ringdp::comm

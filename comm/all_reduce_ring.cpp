// Ring all-reduce: a reduce-scatter followed by an all-gather, each N−1 steps around the ring
// r → r+1. Every step moves one chunk (≈ count/N elements) to the right neighbour, so each rank
// sends 2(N−1)/N · count elements in all: the bandwidth-optimal amount.
//
// Step table (N = 4, chunks c0..c3; "r1: c0→" means rank 1 sends its partial chunk 0 right):
//   reduce-scatter step s (s = 0..N−2 here; traces print s+1): rank r sends chunk (r−s) mod N,
//   receives chunk (r−s−1) mod N from its left neighbour and reduces it into its own copy.
//     s=0  r0: c0→r1  r1: c1→r2  r2: c2→r3  r3: c3→r0
//     s=1  r0: c3→r1  r1: c0→r2  r2: c1→r3  r3: c2→r0
//     s=2  r0: c2→r1  r1: c3→r2  r2: c0→r3  r3: c1→r0
//   after which rank r holds the complete reduction of chunk (r+1) mod N.
//   all-gather step s: rank r sends chunk (r+1−s) mod N (complete) and overwrites chunk
//   (r−s) mod N with the one it receives.
// Each chunk's reduction happens on exactly one path in a fixed order, then is copied to every
// rank, so all ranks end bit-identical whatever the timing.
// Segments: a received chunk arrives as segments; reducing segment k overlaps the arrival of
// segment k+1.
// Out of place, nothing is copied up front: each chunk is touched exactly once per rank during
// the reduce-scatter, so the incoming partial can land straight in the output chunk and the
// rank's own input chunk is reduced into it there (out = incoming op input). At step 1 the chunk
// sent is the rank's input itself. In place, the incoming partial must not overwrite the rank's
// own contribution, so it lands in the transport's scratch slot 0 (sized once per call).
// avg: the last reduce-scatter step completes the rank's own chunk, segment by segment; each
// segment is divided by N right after its reduction, while it is still in cache (ctx.scale), and
// the all-gather then copies the divided values.
#include "comm/algorithms.h"

namespace ringdp::comm {

void ring_reduce_scatter_phase(CollectiveContext& ctx, const void* input, void* out,
                               const ChunkLayout& layout, int first_step, int steps) {
  const int N = ctx.size(), r = ctx.rank();
  const bool in_place = input == out;
  const int right = (r + 1) % N, left = (r + N - 1) % N;
  void* scratch = in_place ? ctx.transport.scratch(0, layout.length(0) * ctx.element_bytes()) : nullptr;
  for (int s = 0; s < N - 1; ++s) {
    const int send_chunk = ((r - s) % N + N) % N;
    const int recv_chunk = ((r - s - 1) % N + N) % N;
    ctx.enter_step(first_step + s, steps, "reduce-scatter", right, send_chunk, left, recv_chunk, "reduce");
    const void* sending = ctx.at(s == 0 ? input : out, layout.offset(send_chunk));
    char* target = ctx.at(out, layout.offset(recv_chunk));
    const char* mine = ctx.at(input, layout.offset(recv_chunk));
    const bool last = s == N - 2;  // this rank's own chunk, complete as each segment lands
    if (in_place) {
      exchange_segmented(ctx, right, sending, layout.length(send_chunk), left, scratch,
                         layout.length(recv_chunk), [&](int64_t off, int64_t len) {
                           ctx.transport.reduce_into(ctx.at(target, off), ctx.at(scratch, off), len,
                                                     ctx.dtype, ctx.op);
                           if (last) ctx.scale_completed(ctx.at(target, off), len);
                         });
    } else {
      exchange_segmented(ctx, right, sending, layout.length(send_chunk), left, target,
                         layout.length(recv_chunk), [&](int64_t off, int64_t len) {
                           ctx.transport.reduce_into(ctx.at(target, off), ctx.at(mine, off), len, ctx.dtype,
                                                     ctx.op);
                           if (last) ctx.scale_completed(ctx.at(target, off), len);
                         });
    }
  }
}

void ring_all_gather_phase(CollectiveContext& ctx, void* out, const ChunkLayout& layout, int first_step,
                           int steps) {
  const int N = ctx.size(), r = ctx.rank();
  const int right = (r + 1) % N, left = (r + N - 1) % N;
  for (int s = 0; s < N - 1; ++s) {
    const int send_chunk = ((r + 1 - s) % N + N) % N;
    const int recv_chunk = ((r - s) % N + N) % N;
    ctx.enter_step(first_step + s, steps, "all-gather", right, send_chunk, left, recv_chunk, "store");
    exchange_segmented(ctx, right, ctx.at(out, layout.offset(send_chunk)), layout.length(send_chunk), left,
                       ctx.at(out, layout.offset(recv_chunk)), layout.length(recv_chunk),
                       [](int64_t, int64_t) {});
  }
}

void all_reduce_ring(CollectiveContext& ctx, const void* input, void* out, int64_t count) {
  const int N = ctx.size();
  if (N == 1 || count == 0) {
    if (input != out) ctx.transport.copy(out, input, count * ctx.element_bytes());
    return;
  }
  const ChunkLayout layout{count, N};
  ring_reduce_scatter_phase(ctx, input, out, layout, 1, 2 * (N - 1));
  ring_all_gather_phase(ctx, out, layout, N, 2 * (N - 1));
}

}  // namespace ringdp::comm

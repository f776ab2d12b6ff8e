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
// The phases below are written for any chunk `owned` that rank r completes (r+1 above): the
// reduce-scatter sends (owned−1−s) and receives (owned−2−s), the all-gather sends (owned−s) and
// receives (owned−s−1), so reduce_scatter_ring and all_gather_ring (owned = r) run them too.
// Each chunk's reduction happens on exactly one path in a fixed order, then is copied to every
// rank, so all ranks end bit-identical whatever the timing.
// Segments: a received chunk arrives as segments; reducing segment k overlaps the arrival of
// segment k+1.
// Out of place, nothing is copied up front: each chunk is touched exactly once per rank during
// the reduce-scatter, so the incoming partial can land straight in the output chunk and the
// rank's own input chunk is reduced into it there (out = incoming op input). At step 1 the chunk
// sent is the rank's input itself. In place, the incoming partial must not overwrite the rank's
// own contribution, so it lands in the transport's scratch slot 0 (sized once per call). When out
// holds only the owned chunk (reduce_scatter_ring), partials alternate between scratch slots 0
// and 1 instead, and the last lands in out (or is copied there when out overlaps input).
// avg: the last reduce-scatter step completes the rank's own chunk, segment by segment; each
// segment is divided by N right after its reduction, while it is still in cache (ctx.scale), and
// the all-gather then copies the divided values.
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

void ring_reduce_scatter_phase(CollectiveContext& ctx, const void* input, void* out, RingOut out_holds,
                               const ChunkLayout& layout, int owned, int first_step, int steps) {
  const int N = ctx.size(), r = ctx.rank();
  const int right = (r + 1) % N, left = (r + N - 1) % N;
  const size_t eb = ctx.element_bytes();
  const bool whole = out_holds == RingOut::whole_buffer;
  const bool in_place = whole && input == out;
  void* scratch = in_place ? ctx.transport.scratch(0, layout.length(0) * eb) : nullptr;
  void* partials[2] = {nullptr, nullptr};
  bool out_overlaps_input = false;
  if (!whole) {
    partials[0] = ctx.transport.scratch(0, layout.length(0) * eb);
    partials[1] = ctx.transport.scratch(1, layout.length(0) * eb);
    const char* in_begin = static_cast<const char*>(input);
    const char* out_begin = static_cast<const char*>(out);
    out_overlaps_input =
        out_begin < in_begin + layout.count * eb && in_begin < out_begin + layout.length(owned) * eb;
  }
  for (int s = 0; s < N - 1; ++s) {
    const int send_chunk = ((owned - 1 - s) % N + N) % N;
    const int recv_chunk = ((owned - 2 - s) % N + N) % N;
    ctx.enter_step(first_step + s, steps, Phase::reduce_scatter, right, send_chunk, left, recv_chunk,
                   "reduce");
    const bool last = s == N - 2;  // the owned chunk, complete as each segment lands
    // This rank's partial of send_chunk: its input chunk itself at first, then what it reduced
    // the step before (in out's chunk when out holds every chunk, else in a scratch slot).
    const void* sending = s == 0  ? ctx.at(input, layout.offset(send_chunk))
                          : whole ? ctx.at(out, layout.offset(send_chunk))
                                  : partials[(s - 1) % 2];
    // `landing` takes the left neighbour's partial of recv_chunk; reduced = reduced op added makes
    // this rank's, which the next step sends.
    void* landing;
    char* reduced;
    const char* added;
    if (in_place) {
      landing = scratch;
      reduced = ctx.at(out, layout.offset(recv_chunk));
      added = static_cast<const char*>(scratch);
    } else {
      landing = whole                           ? ctx.at(out, layout.offset(recv_chunk))
                : (last && !out_overlaps_input) ? out
                                                : partials[s % 2];
      reduced = static_cast<char*>(landing);
      added = ctx.at(input, layout.offset(recv_chunk));
    }
    exchange_segmented(ctx, right, sending, layout.length(send_chunk), left, landing,
                       layout.length(recv_chunk), [&](int64_t off, int64_t len) {
                         ctx.transport.reduce_into(ctx.at(reduced, off), ctx.at(added, off), len, ctx.dtype,
                                                   ctx.op);
                         if (last) ctx.scale_completed(ctx.at(reduced, off), len);
                       });
    if (!whole && last && reduced != out) ctx.transport.copy(out, reduced, layout.length(recv_chunk) * eb);
  }
}

void ring_all_gather_phase(CollectiveContext& ctx, void* out, const ChunkLayout& layout, int owned,
                           int first_step, int steps) {
  const int N = ctx.size(), r = ctx.rank();
  const int right = (r + 1) % N, left = (r + N - 1) % N;
  for (int s = 0; s < N - 1; ++s) {
    const int send_chunk = ((owned - s) % N + N) % N;
    const int recv_chunk = ((owned - s - 1) % N + N) % N;
    ctx.enter_step(first_step + s, steps, Phase::all_gather, right, send_chunk, left, recv_chunk, "store");
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
  const int owned = ring_owned_chunk(ctx.rank(), N);
  ring_reduce_scatter_phase(ctx, input, out, RingOut::whole_buffer, layout, owned, 1, 2 * (N - 1));
  ring_all_gather_phase(ctx, out, layout, owned, N, 2 * (N - 1));
}

}  // namespace ringdp::comm

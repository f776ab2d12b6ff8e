// Folder comm/algorithms/: the algorithms, on a Transport and nothing above it (no world, no
// queue, no communicator), the pure choice among them (algorithm_choice.h) and DETAIL's
// fingerprint.
//
// The collective algorithms, written once against Transport on raw buffers of `dtype`.
// Each lives in its own file (<collective>_<algorithm>.cpp) with its step table; this header
// declares them and the context they share. All counts are in elements.
//
// Words used throughout:
//   rank, size (N)  this process and how many take part
//   peer            the rank a step exchanges with (left/right neighbour in a ring)
//   chunk           1/N of the buffer: the unit a ring step moves (sizes differ by at most 1)
//   segment         a slice of a chunk; segments let the reduction of segment k overlap the
//                   arrival of segment k+1
//   step            one exchange with one peer
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/position.h"
#include "comm/transport/transport.h"
#include "core/dtype.h"
#include "core/reduce_op.h"
#include "core/timeline.h"

namespace ringdp::comm {

class SharedAllocations;  // comm/transport/shm/shared_allocations.h
struct SharedPlace;

struct CollectiveContext {
  Transport& transport;
  DType dtype;
  ReduceOp op;  ///< avg arrives here as sum; see `scale` for the division
  Position& position;
  size_t segment_bytes;  ///< pipelining unit of the ring (bytes, rounded to whole elements)
  bool trace;  ///< RINGDP_TRACE=1: one line per step on stderr
  int tag;  ///< MPI tag of this collective's messages
  std::vector<Request>& requests;  ///< reused request list
  bool corrupt_next_receive = false;  ///< RINGDP_FAULT corrupt: flip a bit of the next segment
  const StepObserver* observer = nullptr;  ///< Communicator::set_step_observer's, if any
  timeline::Clock::time_point step_begin{};  ///< when the open step began (timeline on)
  int step_send = -1;  ///< the open step's send peer, for its timeline event
  bool steps_ended = false;
  /// avg's 1/N when the algorithm divides as it goes (ring and Rabenseifner on host memory):
  /// each rank scales the part whose reduction it completes, right after reducing it, so the
  /// division costs 1/N of a pass over data still in cache instead of a whole pass after the
  /// collective. 1 otherwise: the communicator divides the result.
  double scale = 1.0;

  int rank() const { return transport.rank(); }
  int size() const { return transport.size(); }
  size_t element_bytes() const { return dtype_size(dtype); }
  char* at(void* base, int64_t element) const { return static_cast<char*>(base) + element * element_bytes(); }
  const char* at(const void* base, int64_t element) const {
    return static_cast<const char*>(base) + element * element_bytes();
  }
  int64_t segment_elements() const;
  /// Records the step for the watchdog and prints it when tracing.
  void enter_step(int step, int steps, Phase phase, int send_peer, int send_chunk, int recv_peer,
                  int recv_chunk, const char* action);
  /// RINGDP_TRACE=1: one more line on the open step, for what its peers and chunk cannot say
  /// (shared memory sends no message: which elements a rank reduces or copies). Callers test
  /// `trace` first, so a collective that is not traced builds no text.
  void trace_detail(const std::string& text) const;
  /// Multiplies `count` elements at `data`, whose reduction this rank has just completed, by
  /// `scale` (nothing when it is 1). Host memory only.
  void scale_completed(void* data, int64_t count) const;
  /// After the last step: closes its timeline event and tells the observer (once). Inline: most
  /// collectives have neither, and this runs for every one (docs/benchmarks.md).
  void end_steps() {
    if (steps_ended) return;
    steps_ended = true;
    if (observer || step_begin != timeline::Clock::time_point{}) report_end_of_steps();
  }
  void report_end_of_steps();
  /// Records the open step as a timeline event ending at `now`.
  void close_step(timeline::Clock::time_point now);
};

/// The ring's chunk layout: count split into N chunks whose sizes differ by at most one
/// (the first count % N chunks get the extra element).
struct ChunkLayout {
  int64_t count;
  int chunks;
  int64_t offset(int chunk) const;
  int64_t length(int chunk) const;
};

/// Sends send_count elements to send_peer and receives recv_count into recv from recv_peer,
/// both split into segments; calls on_segment(offset, length) as each received segment lands,
/// so processing one segment overlaps the arrival of the next.
template <typename OnSegment>
void exchange_segmented(CollectiveContext& ctx, int send_peer, const void* send, int64_t send_count,
                        int recv_peer, void* recv, int64_t recv_count, OnSegment on_segment) {
  const int64_t seg = ctx.segment_elements();
  const size_t eb = ctx.element_bytes();
  auto& requests = ctx.requests;
  requests.clear();
  const int64_t recv_segments = (recv_count + seg - 1) / seg;
  for (int64_t off = 0; off < recv_count; off += seg)
    requests.push_back(
        ctx.transport.irecv(recv_peer, ctx.at(recv, off), std::min(seg, recv_count - off) * eb, ctx.tag));
  for (int64_t off = 0; off < send_count; off += seg)
    requests.push_back(
        ctx.transport.isend(send_peer, ctx.at(send, off), std::min(seg, send_count - off) * eb, ctx.tag));
  for (int64_t k = 0; k < recv_segments; ++k) {
    ctx.transport.wait(requests[k]);
    const int64_t off = k * seg;
    if (ctx.corrupt_next_receive) {
      ctx.corrupt_next_receive = false;
      ctx.transport.corrupt_byte(ctx.at(recv, off));
    }
    on_segment(off, std::min(seg, recv_count - off));
  }
  ctx.transport.wait_all(std::span<Request>(requests).subspan(recv_segments));
}

/// exchange_segmented for blocks whose length may differ between calls (the uneven all-to-all and
/// all-gather): an empty block still travels, as a message of no bytes, so a peer that sends a
/// block this rank expects empty (or the other way round) is caught by the receive's length check
/// (comm/transport/envelope.h) at this step, never matched by a later one.
void exchange_blocks(CollectiveContext& ctx, int send_peer, const void* send, int64_t send_count,
                     int recv_peer, void* recv, int64_t recv_count);

/// What the ring reduce-scatter's `out` holds: every chunk (the all-reduce; out may be input), or
/// only the chunk this rank completes (the reduce-scatter; its partials travel through scratch).
enum class RingOut : uint8_t { whole_buffer, owned_chunk };
/// The ring's two phases (all_reduce_ring.cpp), on a layout of ctx.size() chunks, steps numbered
/// from first_step of `steps` for the trace and the watchdog; every ring collective runs these.
/// The reduce-scatter ends with rank r holding the complete reduction of chunk `owned` in out;
/// the all-gather starts from every rank's complete chunk `owned` in out and copies each to every
/// rank. Rank r's `owned` is ring_owned_chunk for the all-reduce, r for the others.
void ring_reduce_scatter_phase(CollectiveContext& ctx, const void* input, void* out, RingOut out_holds,
                               const ChunkLayout& layout, int owned, int first_step, int steps);
void ring_all_gather_phase(CollectiveContext& ctx, void* out, const ChunkLayout& layout, int owned,
                           int first_step, int steps);
/// The chunk rank r completes in the all-reduce's reduce-scatter: the ring's step table starts
/// each rank sending its own chunk r, so the last to arrive is the left neighbour's, r + 1.
inline int ring_owned_chunk(int rank, int size) { return (rank + 1) % size; }

// all_reduce: the ring reads input and writes out (which may be input); recursive doubling
// works in place on buf.
void all_reduce_ring(CollectiveContext& ctx, const void* input, void* out, int64_t count);
/// How recursive doubling and Rabenseifner run on N ranks that are not a power of two: P is the
/// largest power of two ≤ N and E = N − P; ranks 0..2E−1 pair up, the even rank of each pair
/// hands its buffer to the odd one (fold_in) and receives the result from it at the end
/// (unfold); the odd ones continue as virtual rank r/2, ranks ≥ 2E as r − E.
struct PowerOfTwoFold {
  PowerOfTwoFold(int N, int r);
  int P = 1;  ///< ranks taking part in the power-of-two rounds
  int rounds = 0;  ///< log2 P
  int extra = 0;  ///< N − P
  int rank = 0;
  int vrank = -1;  ///< the virtual rank in 0..P−1; −1 for a rank that sits out
  int real_rank(int v) const { return v < extra ? 2 * v + 1 : v + extra; }
  int fold_steps() const { return extra ? 2 : 0; }
  /// The fold-in step; false when this rank sat out (buf then already holds the result).
  bool fold_in(CollectiveContext& ctx, void* buf, int64_t count, int& step, int steps) const;
  /// The odd rank of an extra pair sends the result back; a no-op for the others.
  void unfold(CollectiveContext& ctx, const void* buf, int64_t count, int steps) const;
};

void all_reduce_recursive_doubling(CollectiveContext& ctx, void* buf, int64_t count);
void all_reduce_rabenseifner(CollectiveContext& ctx, void* buf, int64_t count);
/// Every rank on one host: out of the others' shared-memory slots, each reduces all parts, or in
/// rounds of at least `scatter_min_bytes` its own chunk of them, whose results the others copy.
void all_reduce_shared(CollectiveContext& ctx, SharedSlots& slots, const void* input, void* out,
                       int64_t count, size_t scatter_min_bytes);
/// Buffers in the communicator's shared allocations, at the same place on every rank: rank r
/// reduces chunk r straight out of every rank's input into every rank's output
/// (all_reduce_shared_direct.cpp). Divides by ctx.scale as it goes.
void all_reduce_shared_direct(CollectiveContext& ctx, SharedSlots& slots,
                              const SharedAllocations& allocations, const SharedPlace& input,
                              const SharedPlace& output, int64_t count);
/// The direct all-reduce publishes where its buffers lie, not data, and marks the byte count of
/// that part with this bit, so that a rank reducing through the slots reports such a peer (and
/// the other way round) instead of reading its announcement as data.
inline constexpr size_t kDirectPartBit = size_t{1} << 62;
// reduce: input untouched; out receives the result on root (out may equal input).
void reduce_tree(CollectiveContext& ctx, const void* input, void* out, int64_t count, int root);
// broadcast: in place on buf.
void broadcast_tree(CollectiveContext& ctx, void* buf, int64_t count, int root);
void broadcast_chain(CollectiveContext& ctx, void* buf, int64_t count, int root);
// all_gather: input of chunk_count elements; out of N·chunk_count, rank r's input at chunk r.
void all_gather_ring(CollectiveContext& ctx, const void* input, void* out, int64_t chunk_count);
// reduce_scatter: input of N·chunk_count elements; out receives reduced chunk `rank`.
void reduce_scatter_ring(CollectiveContext& ctx, const void* input, void* out, int64_t chunk_count);
void barrier_dissemination(CollectiveContext& ctx);
// gather: input of block_count elements; out (root only) of N·block_count, rank r's at block r.
void gather_tree(CollectiveContext& ctx, const void* input, void* out, int64_t block_count, int root);
// scatter: input (root only) of N·block_count elements; out receives block `rank`.
void scatter_tree(CollectiveContext& ctx, const void* input, void* out, int64_t block_count, int root);
/// all_to_all, even and uneven: counts and offsets in elements, one per rank (BlockExchange's
/// meaning). `even`: every block has send_counts[0] elements on every rank, so empty blocks move
/// nothing; otherwise every pair exchanges a message, empty or not (exchange_blocks).
void all_to_all_pairwise(CollectiveContext& ctx, const BlockExchange& blocks, bool even);
/// The uneven all-gather: rank i's counts[i] elements land at offsets[i] of out on every rank.
void all_gather_ring_uneven(CollectiveContext& ctx, const void* input, void* out,
                            std::span<const int64_t> counts, std::span<const int64_t> offsets);

/// Hierarchical all-reduce, in place on buf (all_reduce_hierarchical.cpp). `host` spans this
/// rank's host, `cross` the ranks of every host with this rank's local index. Hosts of equal
/// size: ring reduce-scatter inside each host, all-reduce of each rank's shard across hosts
/// (recursive doubling up to rd_max_bytes, else ring), ring all-gather inside each host.
/// Uneven hosts: reduce to each host's first rank, all-reduce across those, broadcast back.
void all_reduce_hierarchical(CollectiveContext& host, CollectiveContext& cross, void* buf, int64_t count,
                             bool uniform_hosts, size_t rd_max_bytes);

}  // namespace ringdp::comm

// Shared-memory all-reduce, for ranks that all run on one host (comm/transport/shm/shared_slots.h). In each
// round every rank copies up to SharedSlots::slot_bytes() of its input into its slot and publishes
// it. No message and no MPI call. Then one of two ways, chosen per round by its byte count
// (every rank sees the same count, or the envelope check stops them first):
//
// - Whole (small rounds): every rank reduces all N parts straight out of the peers' slots into
//   its output. One wait per peer; each rank reads N parts, which is why it loses to the ring as
//   messages grow.
// - Scattered (rounds of at least `scatter_min_bytes`): rank r reduces only chunk r of the round
//   out of all N slots, writes the result back over chunk r of its own slot (nobody else reads
//   that chunk of it in this half) and publishes it; then every rank copies the others' reduced
//   chunks. Two waits per peer, but each rank reads about two parts' worth whatever N is: the
//   reduce-scatter and all-gather of Rabenseifner, without a message.
//
// Either way an element is the sum of the N parts in rank order, so every rank gets the same
// bits, and so does either variant; `auto` picks this algorithm up to
// CommOptions::shared_memory_max_bytes (docs/collectives.md).
#include <algorithm>
#include <cstring>
#include <string>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shared_rounds.h"
#include "comm/refused_alike.h"
#include "comm/transport/envelope.h"
#include "comm/transport/shm/shared_slots.h"
#include "core/error.h"

namespace ringdp::comm {

namespace {
// The envelope check of comm/transport/envelope.h, on a part read from shared memory.
void check_part_envelope(const CollectiveContext& ctx, const SharedSlots& slots, int r, size_t bytes) {
  RINGDP_CHECK(slots.tag(r) == ctx.tag, "rank ", ctx.rank(), " is in ", describe_tag(ctx.tag), " but rank ",
               r, " published a part of ", describe_tag(slots.tag(r)),
               ": the ranks called different collectives");
  RINGDP_CHECK(!(slots.bytes(r) & kDirectPartBit), "all_reduce: rank ", r,
               "'s tensors lie in shared allocations (Communicator::allocate_shared) but rank ", ctx.rank(),
               "'s do not; every rank must pass shared tensors, or none");
  RINGDP_CHECK(slots.bytes(r) == bytes, "rank ", ctx.rank(), " expected ", bytes, " bytes of ",
               describe_tag(ctx.tag), " from rank ", r, " and got ", slots.bytes(r),
               ": the ranks passed different counts");
}

// Every rank reads every part: all refuse alike, in step (comm/refused_alike.h).
void check_part(const CollectiveContext& ctx, const SharedSlots& slots, int r, size_t bytes) {
  refused_alike([&] { check_part_envelope(ctx, slots, r, bytes); });
}

// Waits for rank r's part of the round and checks its envelope.
void take_part(CollectiveContext& ctx, const SharedSlots& slots, int r, size_t bytes) {
  wait_for_peer(ctx, slots, r, [&] { return slots.published(r); });
  check_part(ctx, slots, r, bytes);
}

// RINGDP_FAULT corrupt: flips a byte of what just came from a peer.
void maybe_corrupt(CollectiveContext& ctx, char* received, size_t bytes) {
  if (!ctx.corrupt_next_receive || bytes == 0) return;
  ctx.corrupt_next_receive = false;
  ctx.transport.corrupt_byte(received);
}

void reduce_whole(CollectiveContext& ctx, SharedSlots& slots, char* target, int64_t n, size_t bytes) {
  for (int r = 0; r < slots.size(); ++r) {
    take_part(ctx, slots, r, bytes);
    if (r == 0)
      std::memcpy(target, slots.part(0), bytes);
    else
      ctx.transport.reduce_into(target, slots.part(r), n, ctx.dtype, ctx.op);
    if (r != ctx.rank()) maybe_corrupt(ctx, target, bytes);
  }
}

// RINGDP_TRACE's account of a round: elements are counted from the start of the whole buffer
// (`first` is where the round begins), so the lines of every rank and round read as one picture.
std::string elements(int64_t first, int64_t begin, int64_t end) {
  return detail::concat("elements [", first + begin, ", ", first + end, ")");
}

void reduce_scattered(CollectiveContext& ctx, SharedSlots& slots, char* mine, char* target, int64_t first,
                      int64_t n, size_t bytes, int& step, int steps) {
  const int N = slots.size(), me = ctx.rank();
  const size_t element = ctx.element_bytes();
  const int64_t begin = chunk_begin(n, N, me, element), end = chunk_begin(n, N, me + 1, element);
  if (ctx.trace)
    ctx.trace_detail(detail::concat("reduce chunk ", me, " = ", elements(first, begin, end),
                                    " of the round's ", elements(first, 0, n), " from the slots of ranks 0-",
                                    N - 1, " into rank ", me, "'s slot"));
  char* sum = ctx.at(target, begin);
  for (int r = 0; r < N; ++r) {
    take_part(ctx, slots, r, bytes);
    if (r == 0)
      std::memcpy(sum, ctx.at(slots.part(0), begin), static_cast<size_t>(end - begin) * element);
    else
      ctx.transport.reduce_into(sum, ctx.at(slots.part(r), begin), end - begin, ctx.dtype, ctx.op);
  }
  std::memcpy(ctx.at(mine, begin), sum, static_cast<size_t>(end - begin) * element);
  slots.publish_reduced();
  ctx.enter_step(++step, steps, Phase::all_gather, -1, -1, -1, -1, "gather");
  for (int r = 0; r < N; ++r) {
    if (r == me) continue;
    wait_for_peer(ctx, slots, r, [&] { return slots.reduced(r); });
    const int64_t from = chunk_begin(n, N, r, element), to = chunk_begin(n, N, r + 1, element);
    const size_t length = static_cast<size_t>(to - from) * element;
    if (ctx.trace)
      ctx.trace_detail(
          detail::concat("copy chunk ", r, " = ", elements(first, from, to), " <- rank ", r, "'s slot"));
    std::memcpy(ctx.at(target, from), ctx.at(slots.part(r), from), length);
    maybe_corrupt(ctx, ctx.at(target, from), length);
  }
}
}  // namespace

void all_reduce_shared(CollectiveContext& ctx, SharedSlots& slots, const void* input, void* out,
                       int64_t count, size_t scatter_min_bytes) {
  const size_t element = ctx.element_bytes();
  const int64_t per_round = static_cast<int64_t>(slots.slot_bytes() / element);
  // Count 0 still takes a round, so that a rank with another count is reported, not waited for.
  const int64_t rounds = std::max<int64_t>(1, (count + per_round - 1) / per_round);
  auto elements_in = [&](int64_t round) { return std::min(per_round, count - round * per_round); };
  auto scattered = [&](int64_t round) {
    return static_cast<size_t>(elements_in(round)) * element >= scatter_min_bytes;
  };
  // A scattered round is two steps (reduce-scatter, all-gather), so --explain and the watchdog
  // can tell them apart.
  int steps = 0;
  for (int64_t round = 0; round < rounds; ++round) steps += scattered(round) ? 2 : 1;
  int step = 0;
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t first = round * per_round, n = elements_in(round);
    const size_t bytes = static_cast<size_t>(n) * element;
    char* mine = static_cast<char*>(slots.begin_round());
    std::memcpy(mine, ctx.at(input, first), bytes);
    slots.publish(ctx.tag, bytes);
    char* target = ctx.at(out, first);
    ctx.enter_step(++step, steps, scattered(round) ? Phase::reduce_scatter : Phase::shared_memory, -1, -1, -1,
                   -1, "reduce");
    if (scattered(round)) {
      reduce_scattered(ctx, slots, mine, target, first, n, bytes, step, steps);
    } else {
      if (ctx.trace)
        ctx.trace_detail(detail::concat("reduce the whole round, ", elements(first, 0, n),
                                        ", from the slots of ranks 0-", slots.size() - 1));
      reduce_whole(ctx, slots, target, n, bytes);
    }
    ctx.position.waiting_for_rank = -1;
  }
}

}  // namespace ringdp::comm

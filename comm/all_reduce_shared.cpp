// Shared-memory all-reduce, for ranks that all run on one host (comm/shared_slots.h): in each
// round every rank copies up to SharedSlots::kSlotBytes of its input into its slot and publishes
// it, then waits for every peer's part and reduces all N parts, in rank order, straight out of
// the peers' slots into its output. No message and no MPI call: a round costs one copy in, N − 1
// cache-line handoffs and the reduction. Every rank combines the same parts in the same order, so
// all get the same bits. It reads N − 1 parts per rank where the ring reads about two, so it
// wins for small messages, where latency is everything; `auto` picks it there (docs/collectives.md).
#include <algorithm>
#include <cstring>

#include "comm/algorithms.h"
#include "comm/envelope.h"
#include "comm/shared_slots.h"
#include "kernels/error.h"

namespace ringdp::comm {

namespace {
// The envelope check of comm/envelope.h, on a part read from shared memory.
void check_part(const CollectiveContext& ctx, const SharedSlots& slots, int r, size_t bytes) {
  RINGDP_CHECK(slots.tag(r) == ctx.tag, "rank ", ctx.rank(), " is in ", describe_tag(ctx.tag), " but rank ",
               r, " published a part of ", describe_tag(slots.tag(r)),
               ": the ranks called different collectives");
  RINGDP_CHECK(slots.bytes(r) == bytes, "rank ", ctx.rank(), " expected ", bytes, " bytes of ",
               describe_tag(ctx.tag), " from rank ", r, " and got ", slots.bytes(r),
               ": the ranks passed different counts");
}
}  // namespace

void all_reduce_shared(CollectiveContext& ctx, SharedSlots& slots, const void* input, void* out,
                       int64_t count) {
  const int N = slots.size();
  const size_t element = ctx.element_bytes();
  const int64_t per_round = static_cast<int64_t>(SharedSlots::kSlotBytes / element);
  // Count 0 still takes a round, so that a rank with another count is reported, not waited for.
  const int steps = static_cast<int>(std::max<int64_t>(1, (count + per_round - 1) / per_round));
  for (int step = 0; step < steps; ++step) {
    const int64_t first = step * per_round, n = std::min(per_round, count - first);
    const size_t bytes = static_cast<size_t>(n) * element;
    std::memcpy(slots.begin_round(), ctx.at(input, first), bytes);
    slots.publish(ctx.tag, bytes);
    char* target = ctx.at(out, first);
    ctx.enter_step(step + 1, steps, "shared memory", -1, -1, -1, -1, "reduce");
    for (int r = 0; r < N; ++r) {
      ctx.position.waiting_for_rank = r;  // for the watchdog's report
      ctx.transport.poll_until([&] { return slots.published(r); }, slots.yield_while_waiting());
      check_part(ctx, slots, r, bytes);
      if (r == 0)
        std::memcpy(target, slots.part(0), bytes);
      else
        ctx.transport.reduce_into(target, slots.part(r), n, ctx.dtype, ctx.op);
      if (r != ctx.rank() && ctx.corrupt_next_receive && bytes > 0) {  // RINGDP_FAULT corrupt
        ctx.corrupt_next_receive = false;
        ctx.transport.corrupt_byte(target);
      }
    }
    ctx.position.waiting_for_rank = -1;
  }
}

}  // namespace ringdp::comm

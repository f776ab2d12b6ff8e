// The direct all-reduce, for buffers that lie in one of the communicator's shared allocations
// (comm/transport/shm/shared_allocations.h) at the same offset on every rank: no copy into slots, no copy
// out. Every rank can load and store every peer's buffer, so:
//
//   step 1 (announce, the first barrier): each rank publishes, in its slot
//   (comm/transport/shm/shared_slots.h),
//          where its input and output lie and how many elements it reduces, behind the byte-count
//          mark kDirectPartBit. Publishing is a release store made after the caller's last write
//          to its input, so a peer that sees it sees the input. Every rank checks every peer's
//          announcement against its own: a peer in another place, count, or not in a shared
//          allocation at all (it reduces through the slots) is an Error on every rank, not a hang.
//   step 2 (reduce): rank r alone owns chunk r (boundaries 64 bytes apart from the buffer's
//          start, so no two ranks write one cache line of a buffer that starts on one). Block by
//          block (kBlockBytes, cache-resident) it reduces the block out of the N inputs in rank
//          order into a scratch block, then stores the result into all N outputs (out of place
//          with streaming stores, which bypass the cache: no read for ownership of lines that are
//          only written). It then publishes "reduced" (the second barrier: an sfence orders the
//          streaming stores first) and waits until every rank has.
//
// Traffic per rank: it reads n/N from each of N inputs and writes n/N to each of N outputs: n read
// and n written, one memcpy of the buffer, the DRAM floor of docs/benchmarks.md. Each element is
// reduced once, by one rank, in rank order: every rank holds the same bits, the same the slotted
// all-reduce (comm/algorithms/all_reduce_shared.cpp) gives. In place the inputs are the outputs: a block is
// read in full before it is written, and no other rank touches that block. Out of place the
// inputs are left as they were. Tested by tests/mpi/test_shared_allocation.cpp.
#include <algorithm>
#include <cstring>
#include <memory>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shared_rounds.h"
#include "comm/refused_alike.h"
#include "comm/transport/envelope.h"
#include "comm/transport/shm/shared_allocations.h"
#include "comm/transport/shm/shared_slots.h"
#include "core/error.h"
#include "kernels/reduce_into.h"

namespace ringdp::comm {

namespace {

// The unit of step 2: N input blocks and the scratch block stay in L2 (N = 4: 320 KiB).
constexpr size_t kBlockBytes = 64 * 1024;

// What step 1 publishes instead of data.
struct Announcement {
  SharedPlace input, output;
  int64_t count;
  bool operator==(const Announcement&) const = default;
};

std::string describe(const Announcement& a) {
  return detail::concat(a.count, " elements, input at byte ", a.input.offset, " of shared allocation ",
                        a.input.allocation, ", output at byte ", a.output.offset, " of shared allocation ",
                        a.output.allocation);
}

// The announcement is a call's only round (SharedSlots::Placement).
constexpr auto kLone = SharedSlots::Placement::lone;

void check_announcement_fields(CollectiveContext& ctx, const SharedSlots& slots, int r, uint64_t round,
                               const Announcement& mine) {
  RINGDP_CHECK(slots.placed(r, round, kLone), "all_reduce: rank ", ctx.rank(),
               "'s tensors lie in shared allocations (Communicator::allocate_shared) but rank ", r,
               "'s do not; every rank must pass shared tensors, or none");
  RINGDP_CHECK(slots.tag(r, round, kLone) == ctx.tag, "rank ", ctx.rank(), " is in ", describe_tag(ctx.tag),
               " but rank ", r, " published a part of ", describe_tag(slots.tag(r, round, kLone)),
               ": the ranks called different collectives");
  RINGDP_CHECK(slots.bytes(r, round, kLone) & kDirectPartBit, "all_reduce: rank ", ctx.rank(),
               "'s tensors lie in shared allocations (Communicator::allocate_shared) but rank ", r,
               "'s do not; every rank must pass shared tensors, or none");
  Announcement theirs;
  std::memcpy(&theirs, slots.part(r, round, kLone), sizeof theirs);
  RINGDP_CHECK(theirs == mine, "all_reduce: rank ", ctx.rank(), " passed ", describe(mine), " but rank ", r,
               " passed ", describe(theirs), "; every rank must pass the same place of the same allocation");
}

// Every rank compares every announcement: all refuse alike, in step (comm/refused_alike.h).
void check_announcement(CollectiveContext& ctx, SharedSlots& slots, int r, uint64_t round,
                        const Announcement& mine) {
  try {
    refused_alike([&] { check_announcement_fields(ctx, slots, r, round, mine); });
  } catch (const RefusedAlike&) {
    slots.refused(round);
    throw;
  }
}

// Stores that bypass the cache where the target is 16-byte aligned (chunks start on a 64-byte
// line of a page-aligned segment); the unaligned edges by memcpy. Out of place only: there the
// outputs' lines are not in cache, and a plain store would first read each one (read for
// ownership). In place the block was just read, so plain stores hit the cache; streaming ones
// measured slower there (docs/lab/benchmarks.md, "Shared allocations against the floor").
void stream_copy(char* target, const char* source, size_t bytes) {
#if defined(__SSE2__)
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(target) % 16) % 16);
  std::memcpy(target, source, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64)
    for (size_t k = 0; k < 64; k += 16)
      _mm_stream_si128(reinterpret_cast<__m128i*>(target + i + k),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(source + i + k)));
  std::memcpy(target + i, source + i, bytes - i);
#else
  std::memcpy(target, source, bytes);
#endif
}

void store_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// Step 2 over elements [begin, end) of the buffers.
void reduce_chunk(CollectiveContext& ctx, const std::vector<const char*>& inputs,
                  const std::vector<char*>& outputs, int64_t begin, int64_t end, bool in_place) {
  const size_t element = ctx.element_bytes();
  const int64_t block = static_cast<int64_t>(kBlockBytes / element);
  struct alignas(64) Block {
    char bytes[kBlockBytes];
  };
  thread_local const std::unique_ptr<Block> scratch_block = std::make_unique<Block>();
  char* scratch = scratch_block->bytes;
  for (int64_t first = begin; first < end; first += block) {
    const int64_t n = std::min(block, end - first);
    const size_t bytes = static_cast<size_t>(n) * element;
    std::memcpy(scratch, ctx.at(inputs[0], first), bytes);
    for (size_t r = 1; r < inputs.size(); ++r)
      kernels::reduce_into_cpu(scratch, ctx.at(inputs[r], first), n, ctx.dtype, ctx.op);
    ctx.scale_completed(scratch, n);
    if (ctx.corrupt_next_receive) {  // RINGDP_FAULT corrupt: the result read from the peers
      ctx.corrupt_next_receive = false;
      ctx.transport.corrupt_byte(scratch);
    }
    for (char* output : outputs)
      if (in_place)
        std::memcpy(ctx.at(output, first), scratch, bytes);
      else
        stream_copy(ctx.at(output, first), scratch, bytes);
  }
  store_fence();
}

}  // namespace

void all_reduce_shared_direct(CollectiveContext& ctx, SharedSlots& slots,
                              const SharedAllocations& allocations, const SharedPlace& input,
                              const SharedPlace& output, int64_t count) {
  const int N = slots.size(), me = ctx.rank();
  const Announcement mine{.input = input, .output = output, .count = count};
  ctx.enter_step(1, 2, Phase::reduce_scatter, -1, -1, -1, -1, "reduce");
  // The slot this round takes is free once every rank has finished the round it held before.
  for (int r = 0; r < N; ++r) wait_for_peer(ctx, slots, r, [&] { return slots.free_for_next(r, kLone); });
  std::memcpy(slots.begin_round(kLone), &mine, sizeof mine);
  const uint64_t round = slots.begun();
  slots.publish(round, ctx.tag, kDirectPartBit | sizeof mine);
  for (int r = 0; r < N; ++r) {
    wait_for_peer(ctx, slots, r, [&] { return slots.published(r, round); });
    check_announcement(ctx, slots, r, round, mine);
  }
  slots.finish(round);  // the announcements are all this rank reads of the slots
  // Kept from call to call: no allocation per collective.
  thread_local std::vector<const char*> inputs;
  thread_local std::vector<char*> outputs;
  inputs.resize(static_cast<size_t>(N));
  outputs.resize(static_cast<size_t>(N));
  for (int r = 0; r < N; ++r) {
    inputs[static_cast<size_t>(r)] = allocations.at(input.allocation, r, input.offset);
    outputs[static_cast<size_t>(r)] = allocations.at(output.allocation, r, output.offset);
  }
  const size_t element = ctx.element_bytes();
  const int64_t begin = chunk_begin(count, N, me, element), end = chunk_begin(count, N, me + 1, element);
  if (ctx.trace)
    ctx.trace_detail(detail::concat("reduce chunk ", me, " = elements [", begin, ", ", end,
                                    ") out of every rank's buffer into every rank's buffer"));
  reduce_chunk(ctx, inputs, outputs, begin, end, input == output);
  slots.publish_reduced(round);
  ctx.enter_step(2, 2, Phase::all_gather, -1, -1, -1, -1, "wait");
  for (int r = 0; r < N; ++r)
    if (r != me) wait_for_peer(ctx, slots, r, [&] { return slots.reduced(r, round); });
}

}  // namespace ringdp::comm

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
// The rounds are not taken one at a time: a rank does whatever work is ready, copying out a round
// whose reduced chunks are all there first, then reducing a round whose parts are all there, then
// publishing the next round while its ring has a free slot. A rank that runs while a peer is
// descheduled (a busy host) so does a ring's worth of rounds per time slice, not one.
//
// Either way an element is the sum of the N parts in rank order, so every rank gets the same
// bits, and so does either variant; `auto` picks this algorithm up to
// CommOptions::shared_memory_max_bytes (docs/collectives.md).
#include <algorithm>
#include <chrono>
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
using Placement = SharedSlots::Placement;

// The envelope check of comm/transport/envelope.h, on a part read from shared memory.
void check_part_envelope(const CollectiveContext& ctx, const SharedSlots& slots, int r, uint64_t round,
                         Placement placement, size_t bytes) {
  RINGDP_CHECK(slots.placed(r, round, placement), "rank ", ctx.rank(), " expected ", bytes, " bytes of ",
               describe_tag(ctx.tag), " from rank ", r, placement == Placement::lone ? " in one round" : "",
               ", and rank ", r, "'s call ",
               placement == Placement::lone ? "is longer" : "is one small round",
               " (the next call, if its count was smaller): the ranks passed different counts");
  RINGDP_CHECK(slots.tag(r, round, placement) == ctx.tag, "rank ", ctx.rank(), " is in ",
               describe_tag(ctx.tag), " but rank ", r, " published a part of ",
               describe_tag(slots.tag(r, round, placement)), ": the ranks called different collectives");
  RINGDP_CHECK(!(slots.bytes(r, round, placement) & kDirectPartBit), "all_reduce: rank ", r,
               "'s tensors lie in shared allocations (Communicator::allocate_shared) but rank ", ctx.rank(),
               "'s do not; every rank must pass shared tensors, or none");
  RINGDP_CHECK(slots.bytes(r, round, placement) == bytes, "rank ", ctx.rank(), " expected ", bytes,
               " bytes of ", describe_tag(ctx.tag), " from rank ", r, " and got ",
               slots.bytes(r, round, placement), ": the ranks passed different counts");
}

// RINGDP_FAULT corrupt: flips a byte of what just came from a peer.
void maybe_corrupt(CollectiveContext& ctx, char* received, size_t bytes) {
  if (!ctx.corrupt_next_receive || bytes == 0) return;
  ctx.corrupt_next_receive = false;
  ctx.transport.corrupt_byte(received);
}

// RINGDP_TRACE's account of a round: elements are counted from the start of the whole buffer
// (`first` is where the round begins), so the lines of every rank and round read as one picture.
std::string elements(int64_t first, int64_t begin, int64_t end) {
  return detail::concat("elements [", first + begin, ", ", first + end, ")");
}

// RINGDP_TRACE's line for a round that is reduced whole.
void trace_whole(const CollectiveContext& ctx, int64_t first, int64_t n) {
  ctx.trace_detail(detail::concat("reduce the whole round, ", elements(first, 0, n),
                                  ", from the slots of ranks 0-", ctx.size() - 1));
}

// Part r of a round reduced whole, into `target`: the sum in rank order.
void add_part(CollectiveContext& ctx, const SharedSlots& slots, int r, uint64_t round, Placement placement,
              char* target, int64_t n) {
  const size_t bytes = static_cast<size_t>(n) * ctx.element_bytes();
  if (r == 0)
    std::memcpy(target, slots.part(0, round, placement), bytes);
  else
    ctx.transport.reduce_into(target, slots.part(r, round, placement), n, ctx.dtype, ctx.op);
  if (r != ctx.rank()) maybe_corrupt(ctx, target, bytes);
}

// A call of one round reduced whole (every all-reduce under 16 KiB): each wait on one flag of one
// peer, each part reduced as it comes. Rounds' loop measured 0.08 us slower at 8-512 B.
void one_whole_round(CollectiveContext& ctx, SharedSlots& slots, const void* input, void* out, int64_t n) {
  const int N = slots.size();
  const size_t bytes = static_cast<size_t>(n) * ctx.element_bytes();
  for (int r = 0; r < N; ++r)
    wait_for_peer(ctx, slots, r, [&] { return slots.free_for_next(r, Placement::lone); });
  std::memcpy(slots.begin_round(Placement::lone), input, bytes);
  const uint64_t round = slots.begun();
  slots.publish(round, ctx.tag, bytes);
  ctx.enter_step(1, 1, Phase::shared_memory, -1, -1, -1, -1, "reduce");
  if (ctx.trace) trace_whole(ctx, 0, n);
  for (int r = 0; r < N; ++r) {
    wait_for_peer(ctx, slots, r, [&] { return slots.published(r, round); });
    try {
      refused_alike([&] { check_part_envelope(ctx, slots, r, round, Placement::lone, bytes); });
    } catch (const RefusedAlike&) {
      slots.refused(round);
      throw;
    }
    add_part(ctx, slots, r, round, Placement::lone, static_cast<char*>(out), n);
  }
  slots.finish(round);
}

// A wait this long means a peer was not running: a round's work is some 40 us at 256 KiB, a
// scheduler's time slice milliseconds.
constexpr auto kDescheduled = std::chrono::microseconds(200);

// One call's rounds, numbered 0.. here and base + 1.. in the slots, and how far this rank has
// taken each: begun (published), reduced, finished (copied out; its slots free again).
class Rounds {
 public:
  Rounds(CollectiveContext& ctx, SharedSlots& slots, const void* input, void* out, int64_t count,
         size_t scatter_min_bytes)
      : ctx_(ctx),
        slots_(slots),
        input_(input),
        out_(out),
        count_(count),
        element_(ctx.element_bytes()),
        per_round_(static_cast<int64_t>(slots.slot_bytes() / element_)),
        // Count 0 still takes a round, so that a rank with another count is reported, not waited for.
        rounds_(std::max<int64_t>(1, (count + per_round_ - 1) / per_round_)),
        base_(slots.begun()),
        scatter_min_bytes_(scatter_min_bytes),
        lead_(slots.run_ahead() ? slots.depth() : 1) {
    // A scattered round is two steps (reduce-scatter, all-gather), so --explain and the watchdog
    // can tell them apart. Only the last round can be shorter, so only it can differ in kind.
    steps_ = 0;
    for (int64_t k = 0; k < rounds_; ++k) steps_ += scattered(k) ? 2 : 1;
  }

  void run() {
    try {
      while (finished_ < rounds_) {
        if (copy_ready() || reduce_ready() || begin_ready()) continue;
        wait();
      }
    } catch (const RefusedAlike&) {
      slots_.refused(round(reduced_));
      throw;
    }
    ctx_.position.waiting_for_rank = -1;
    slots_.set_run_ahead(descheduled_);
  }

 private:
  int64_t elements_in(int64_t k) const { return std::min(per_round_, count_ - k * per_round_); }
  size_t bytes_in(int64_t k) const { return static_cast<size_t>(elements_in(k)) * element_; }
  bool scattered(int64_t k) const { return bytes_in(k) >= scatter_min_bytes_; }
  Placement placement(int64_t k) const { return scattered(k) ? Placement::scattered : Placement::whole; }
  uint64_t round(int64_t k) const { return base_ + static_cast<uint64_t>(k) + 1; }
  int step_of(int64_t k) const { return static_cast<int>(k) * (scattered(0) ? 2 : 1) + 1; }
  int64_t chunk(int64_t k, int r) const { return chunk_begin(elements_in(k), slots_.size(), r, element_); }

  // The first rank that keeps `ready` from holding, or -1.
  template <typename F>
  int first_not(F&& ready) const {
    for (int r = 0; r < slots_.size(); ++r)
      if (!ready(r)) return r;
    return -1;
  }

  bool can_begin() const {
    return begun_ < rounds_ && begun_ - finished_ < lead_ &&
           first_not([&](int r) { return slots_.free_for_next(r, placement(begun_)); }) < 0;
  }
  // Checks the envelope of each part as it arrives, in rank order: every rank reads every part, so
  // all refuse alike, in step, at the same round (comm/refused_alike.h).
  bool can_reduce() {
    if (reduced_ == begun_) return false;
    for (; checked_ < slots_.size() && slots_.published(checked_, round(reduced_)); ++checked_)
      refused_alike([&] {
        check_part_envelope(ctx_, slots_, checked_, round(reduced_), placement(reduced_), bytes_in(reduced_));
      });
    return checked_ == slots_.size();
  }
  bool can_copy() const {
    if (finished_ == reduced_) return false;
    return !scattered(finished_) ||
           first_not([&](int r) { return r == ctx_.rank() || slots_.reduced(r, round(finished_)); }) < 0;
  }

  bool begin_ready() {
    if (!can_begin()) return false;
    std::memcpy(slots_.begin_round(placement(begun_)), ctx_.at(input_, begun_ * per_round_),
                bytes_in(begun_));
    slots_.publish(round(begun_), ctx_.tag, bytes_in(begun_));
    ++begun_;
    return true;
  }

  bool reduce_ready() {
    if (!can_reduce()) return false;
    const int64_t k = reduced_;
    ctx_.enter_step(step_of(k), steps_, scattered(k) ? Phase::reduce_scatter : Phase::shared_memory, -1, -1,
                    -1, -1, "reduce");
    if (scattered(k))
      reduce_chunk(k);
    else
      reduce_whole(k);
    ++reduced_;
    checked_ = 0;
    return true;
  }

  void reduce_whole(int64_t k) {
    const int64_t n = elements_in(k), first = k * per_round_;
    char* target = ctx_.at(out_, first);
    if (ctx_.trace) trace_whole(ctx_, first, n);
    for (int r = 0; r < slots_.size(); ++r) add_part(ctx_, slots_, r, round(k), Placement::whole, target, n);
  }

  // Reduces this rank's chunk of round k out of every slot and writes it back over the same chunk
  // of its own slot, where the others copy it from.
  void reduce_chunk(int64_t k) {
    const int N = slots_.size(), me = ctx_.rank();
    const int64_t first = k * per_round_, begin = chunk(k, me), end = chunk(k, me + 1);
    if (ctx_.trace)
      ctx_.trace_detail(detail::concat("reduce chunk ", me, " = ", elements(first, begin, end),
                                       " of the round's ", elements(first, 0, elements_in(k)),
                                       " from the slots of ranks 0-", N - 1, " into rank ", me, "'s slot"));
    char* sum = ctx_.at(ctx_.at(out_, first), begin);
    const size_t length = static_cast<size_t>(end - begin) * element_;
    for (int r = 0; r < N; ++r) {
      const char* part = ctx_.at(slots_.part(r, round(k), Placement::scattered), begin);
      if (r == 0)
        std::memcpy(sum, part, length);
      else
        ctx_.transport.reduce_into(sum, part, end - begin, ctx_.dtype, ctx_.op);
    }
    std::memcpy(ctx_.at(slots_.mine(round(k), Placement::scattered), begin), sum, length);
    slots_.publish_reduced(round(k));
  }

  bool copy_ready() {
    if (!can_copy()) return false;
    const int64_t k = finished_;
    if (scattered(k)) copy_chunks(k);
    slots_.finish(round(k));
    ++finished_;
    return true;
  }

  void copy_chunks(int64_t k) {
    ctx_.enter_step(step_of(k) + 1, steps_, Phase::all_gather, -1, -1, -1, -1, "gather");
    const int64_t first = k * per_round_;
    char* target = ctx_.at(out_, first);
    for (int r = 0; r < slots_.size(); ++r) {
      if (r == ctx_.rank()) continue;
      const int64_t from = chunk(k, r), to = chunk(k, r + 1);
      const size_t length = static_cast<size_t>(to - from) * element_;
      if (ctx_.trace)
        ctx_.trace_detail(
            detail::concat("copy chunk ", r, " = ", elements(first, from, to), " <- rank ", r, "'s slot"));
      std::memcpy(ctx_.at(target, from), ctx_.at(slots_.part(r, round(k), Placement::scattered), from),
                  length);
      maybe_corrupt(ctx_, ctx_.at(target, from), length);
    }
  }

  // Nothing is ready: waits for the rank that holds up the oldest unfinished stage. The watchdog's
  // report names it while it is awaited; a peer in this collective by another algorithm (which
  // would never publish) is found by what it announced.
  void wait() {
    int late = -1;
    if (finished_ < reduced_)
      late = first_not([&](int r) { return r == ctx_.rank() || slots_.reduced(r, round(finished_)); });
    if (late < 0 && reduced_ < begun_) late = checked_;
    if (late < 0) late = first_not([&](int r) { return slots_.free_for_next(r, placement(begun_)); });
    ctx_.position.waiting_for_rank = late;
    uint32_t polls = 0;
    const auto began = std::chrono::steady_clock::now();
    ctx_.transport.poll_until(
        [&] {
          if ((++polls & 1023u) == 0 && late >= 0) slots_.check_same_call(late);
          return can_copy() || can_reduce() || can_begin();
        },
        slots_.yield_while_waiting());
    if (std::chrono::steady_clock::now() - began > kDescheduled) {
      lead_ = slots_.depth();
      descheduled_ = true;
    }
  }

  CollectiveContext& ctx_;
  SharedSlots& slots_;
  const void* input_;
  void* out_;
  int64_t count_;
  size_t element_;
  int64_t per_round_, rounds_;
  uint64_t base_;
  size_t scatter_min_bytes_;
  int steps_ = 0;
  int64_t begun_ = 0, reduced_ = 0, finished_ = 0;
  // How many rounds this rank may have begun and not finished. One while its peers keep pace: a
  // round begun ahead on an idle host only delays the answer a peer waits for (4-8% slower from
  // 4 MiB, measured). The whole ring once a wait shows a peer descheduled, for this call and the
  // next (SharedSlots::run_ahead).
  int64_t lead_;
  bool descheduled_ = false;  // a wait of this call was long
  int checked_ = 0;  // parts of the round to reduce next whose envelopes passed
};
}  // namespace

void all_reduce_shared(CollectiveContext& ctx, SharedSlots& slots, const void* input, void* out,
                       int64_t count, size_t scatter_min_bytes) {
  if (count <= static_cast<int64_t>(slots.slot_bytes() / ctx.element_bytes()) &&
      static_cast<size_t>(count) * ctx.element_bytes() < scatter_min_bytes)
    return one_whole_round(ctx, slots, input, out, count);
  Rounds(ctx, slots, input, out, count, scatter_min_bytes).run();
}

}  // namespace ringdp::comm

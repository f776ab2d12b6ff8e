// Implements comm/transport/shm/shared_slots.h (the contract is documented there).
#include "comm/transport/shm/shared_slots.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <new>

#include "comm/transport/envelope.h"
#include "core/error.h"

namespace ringdp::comm {

// One rank's header. The first line is what a peer waits on: the rounds published and reduced
// and the slot each round holds, written only when a round is published or reduced, so that a
// reader that saw a round finds its slot there. What is written more often and read rarely is
// on a second line: the round this rank finished (every round), what it calls now (every
// collective).
struct alignas(64) SharedSlots::Header {
  // Rounds, each the last one this rank did (atomic_ref: other processes read them).
  uint64_t published;  // published its part
  uint64_t reduced;  // published its reduced chunk (scattered rounds)
  // The envelopes of lone rounds, by round mod 2. Safe to rewrite two rounds later: a lone round
  // is a whole call, so a rank begins round k + 2 only after every peer published k + 1, which
  // each did only after it finished its call of round k.
  int32_t lone_tag[2];
  uint64_t lone_bytes[2];
  // The slot of the ring each round holds, by round mod depth. Rewritten only depth rounds later,
  // once every rank has finished the round before.
  uint8_t slot_of[kMaxDepth];  // kLoneBit set for a lone round
  // Read the last of the others' slots: read by a peer only when what it saw is not enough.
  alignas(64) uint64_t finished;
  // The announced call: sequence mod 2^32 in the high half, its tag in the low (0: none yet). One
  // word, so that a reader never pairs one call's sequence with another's tag.
  uint64_t call;
};

// A whole or scattered round's slot opens with its envelope; the part follows (Placement).
struct SharedSlots::Envelope {
  int32_t tag;
  uint64_t bytes;
};

namespace {
// Rings of about this much per host: enough rounds in hand that a rank beside busy processes
// does a batch of them per time slice (docs/lab/benchmarks.md, "Beside two busy loops": 8 MiB
// rounds, 12 per step, were at gloo's time there), while 2 ranks still fit twice over in the
// 16 MiB /dev/shm of tests/cli/small_shm.sh and 8 ranks in a container's default 64 MiB.
constexpr size_t kHostRingBytes = 12u << 20;

// The counters live in memory other processes read and write: atomic_ref over plain fields,
// since the header is placed in MPI's window rather than constructed as atomics.
uint64_t load_round(const uint64_t& field) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(field)).load(std::memory_order_acquire);
}
void store_round(uint64_t& field, uint64_t round) {
  std::atomic_ref<uint64_t>(field).store(round, std::memory_order_release);
}

void* align_up(void* p, size_t alignment) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<void*>((at + alignment - 1) / alignment * alignment);
}
}  // namespace

int SharedSlots::depth(size_t slot_bytes, int ranks) {
  const size_t fits = kHostRingBytes / (slot_bytes * static_cast<size_t>(std::max(ranks, 1)));
  return static_cast<int>(std::bit_floor(std::clamp<size_t>(fits, 2, kMaxDepth)));
}

// MPI's shared window places a rank's segment wherever its layout puts it (Open MPI: 8-byte
// aligned). The headers need a cache line each, so each region has room to align it; the
// mappings are page-aligned in every process, so all ranks align a region to the same byte.
size_t SharedSlots::region_bytes(size_t slot_bytes, int ranks) {
  static_assert(sizeof(Envelope) <= offset(Placement::whole) && offset(Placement::scattered) <= kSlotHead &&
                    sizeof(Header) == 128,
                "a part follows its envelope; the header is two lines");
  return alignof(Header) + sizeof(Header) +
         static_cast<size_t>(depth(slot_bytes, ranks)) * (kSlotHead + slot_bytes);
}

std::string SharedSlots::space_text(size_t slot_bytes, int ranks) {
  return detail::concat("ringdp's shared-memory slots (a ring of ", depth(slot_bytes, ranks),
                        " of RINGDP_SHM_SLOT_BYTES=", slot_bytes, " bytes per rank)");
}

SharedSlots::SharedSlots(int rank, std::vector<void*> regions, size_t slot_bytes, bool yield_while_waiting,
                         std::function<void()> release, bool collective_release)
    : rank_(rank),
      slot_bytes_(slot_bytes),
      depth_(depth(slot_bytes, static_cast<int>(regions.size()))),
      yield_(yield_while_waiting),
      release_(std::move(release)),
      collective_release_(collective_release),
      last_round_(static_cast<size_t>(depth_), 0),
      my_slots_(static_cast<size_t>(depth_), 0),
      my_lone_(static_cast<size_t>(depth_), false) {
  for (void* region : regions) {
    void* header = align_up(region, alignof(Header));
    peers_.push_back(Peer{static_cast<Header*>(header), static_cast<char*>(header) + sizeof(Header), 0});
  }
  // Every ring is touched now: this rank's written, the others' read a byte a page. Else the first
  // rounds of the first collectives each wait for page faults (a ring's first pass measured 100 us
  // slower a round at 256 KiB), and the process's resident memory grows as the rounds reach slots
  // it has not read yet (tests/cli/bench.sh soak saw 6.5 MiB under MPICH).
  const size_t ring = static_cast<size_t>(depth_) * (kSlotHead + slot_bytes);
  std::memset(peers_[static_cast<size_t>(rank)].data, 0, ring);
  for (const Peer& peer : peers_)
    for (size_t at = 0; at < ring; at += 4096)
      static_cast<void>(*static_cast<volatile const char*>(peer.data + at));
  Header& mine = *new (peers_[static_cast<size_t>(rank)].header) Header{};
  store_round(mine.published, 0);
  store_round(mine.reduced, 0);
  store_round(mine.finished, 0);
  store_round(mine.call, 0);
}

SharedSlots::~SharedSlots() { release(true); }

void SharedSlots::release(bool free) {
  auto release = std::move(release_);
  release_ = nullptr;
  if (free && release) release();
}

bool SharedSlots::finished_by(int r, uint64_t round) const {
  uint64_t& seen = peers_[static_cast<size_t>(r)].finished_seen;
  if (seen >= round) return true;
  seen = load_round(header(r).finished);
  return seen >= round;
}

bool SharedSlots::free_for_next(int r, Placement placement) const {
  const uint64_t next = round_ + 1, depth = static_cast<uint64_t>(depth_);
  // The next round rewrites the slot_of entry of round next - depth.
  if (next > depth && !finished_by(r, next - depth)) return false;
  return placement != Placement::lone || finished_by(r, last_round_[entry(next)]);
}

size_t SharedSlots::recent_slot() {
  uint64_t done = UINT64_MAX;  // every round up to this one every rank has finished
  for (int r = 0; r < size(); ++r) {
    uint64_t& seen = peers_[static_cast<size_t>(r)].finished_seen;
    seen = load_round(header(r).finished);
    done = std::min(done, seen);
  }
  // free_for_next held for every rank: the rounds after `done` are at most depth - 1 and hold at
  // most depth - 1 slots, so one is free.
  size_t best = last_round_.size();
  for (size_t slot = 0; slot < last_round_.size(); ++slot)
    if (last_round_[slot] <= done && (best == last_round_.size() || last_round_[slot] > last_round_[best]))
      best = slot;
  RINGDP_CHECK(best < last_round_.size(), "shared slots: no free slot for round ", round_, " (", done,
               " finished everywhere, a ring of ", depth_, ")");
  return best;
}

void* SharedSlots::begin_round(Placement placement) {
  ++round_;
  const size_t slot = placement == Placement::lone ? entry(round_) : recent_slot();
  last_round_[slot] = round_;
  my_slots_[entry(round_)] = static_cast<uint8_t>(slot);
  my_lone_[entry(round_)] = placement == Placement::lone;
  return mine(round_, placement);
}

void SharedSlots::publish(uint64_t round, int tag, size_t bytes) {
  Header& me = my_header();
  if (my_lone_[entry(round)]) {
    me.lone_tag[round & 1] = tag;
    me.lone_bytes[round & 1] = bytes;
  } else {
    Envelope& envelope = envelope_of(rank_, round, Placement::whole);  // this rank's own: as begun
    envelope.tag = tag;
    envelope.bytes = bytes;
  }
  me.slot_of[entry(round)] =
      static_cast<uint8_t>(my_slots_[entry(round)] | (my_lone_[entry(round)] ? kLoneBit : 0));
  // Release: whoever sees the new round sees the part, its envelope and its slot too.
  store_round(me.published, round);
}

bool SharedSlots::published(int r, uint64_t round) const { return load_round(header(r).published) >= round; }

void SharedSlots::publish_reduced(uint64_t round) { store_round(my_header().reduced, round); }

bool SharedSlots::reduced(int r, uint64_t round) const { return load_round(header(r).reduced) >= round; }

void SharedSlots::finish(uint64_t round) { store_round(my_header().finished, round); }

char* SharedSlots::slot_of(int r, uint64_t round, Placement placement) const {
  // A lone round's slot is known before its header is read: its lines can be on their way.
  const size_t slot = r == rank_                     ? my_slots_[entry(round)]
                      : placement == Placement::lone ? entry(round)
                                                     : header(r).slot_of[entry(round)] & ~kLoneBit;
  return peers_[static_cast<size_t>(r)].data + slot * (kSlotHead + slot_bytes_);
}

bool SharedSlots::placed(int r, uint64_t round, Placement placement) const {
  if (r == rank_) return true;
  const uint8_t said = header(r).slot_of[entry(round)];
  return placement == Placement::lone ? said == (entry(round) | kLoneBit) : !(said & kLoneBit);
}

const void* SharedSlots::part(int r, uint64_t round, Placement placement) const {
  return slot_of(r, round, placement) + offset(placement);
}

void* SharedSlots::mine(uint64_t round, Placement placement) {
  return slot_of(rank_, round, placement) + offset(placement);
}

int SharedSlots::tag(int r, uint64_t round, Placement placement) const {
  return placement == Placement::lone ? header(r).lone_tag[round & 1] : envelope_of(r, round, placement).tag;
}

size_t SharedSlots::bytes(int r, uint64_t round, Placement placement) const {
  return placement == Placement::lone ? header(r).lone_bytes[round & 1]
                                      : envelope_of(r, round, placement).bytes;
}

// Every rank refuses `round`, and none can have begun past round + depth - 1: that needs every
// rank to have finished `round`. Skipping to there puts all at the same next round, whose slot
// each writer takes only once every rank has refused too (their `finished` moves past `round`
// only then).
void SharedSlots::refused(uint64_t round) {
  round_ = std::max(round_, round + static_cast<uint64_t>(depth_) - 1);
  finish(round_);
}

void SharedSlots::announce(uint64_t sequence, int tag) {
  std::atomic_ref<uint64_t>(my_header().call)
      .store(sequence << 32 | static_cast<uint32_t>(tag), std::memory_order_relaxed);
}

void SharedSlots::check_same_call(int r) const {
  const auto call = [this](int rank) {
    return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(header(rank).call))
        .load(std::memory_order_relaxed);
  };
  const uint64_t mine = call(rank_), theirs = call(r);
  const auto tag = [](uint64_t word) { return static_cast<int>(static_cast<uint32_t>(word)); };
  // Tag 0 on this side: this rank has announced nothing yet (a DETAIL check runs before the
  // first announcement), and its empty word would match a peer's collective #0.
  if ((mine >> 32) != (theirs >> 32) || tag(mine) == 0 || tag(theirs) == 0 || tag(theirs) == tag(mine))
    return;
  RINGDP_FAIL("rank ", rank_, " is in ", describe_tag(tag(mine)), " but rank ", r, " is in ",
              describe_tag(tag(theirs)),
              ": the ranks called different collectives or chose different algorithms (auto chooses by size: "
              "compare the counts too)");
}

}  // namespace ringdp::comm

// Implements comm/transport/shm/shared_slots.h (the contract is documented there).
#include "comm/transport/shm/shared_slots.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <new>

#include "comm/transport/envelope.h"
#include "core/error.h"

namespace ringdp::comm {

// One rank's header: its counters on a cache line of their own, so that peers polling them do
// not share a line with a part being written; the envelope of each slot of its ring after them.
struct alignas(64) SharedSlots::Header {
  // Rounds, each the last one this rank did (atomic_ref: other processes read them).
  uint64_t published;  // published its part
  uint64_t reduced;  // published its reduced chunk (scattered rounds)
  // The announced call: sequence mod 2^32 in the high half, its tag in the low (0: none yet). One
  // word, so that a reader never pairs one call's sequence with another's tag.
  uint64_t call;
  // Read the last of the others' slots. Its own line: written every round but read by a peer
  // only when its ring looks full, so a small all-reduce moves one line per round, not two.
  alignas(64) uint64_t finished;
};

// Each slot of a ring opens with its round's envelope, and the part follows on the same line: a
// small all-reduce then moves two lines per peer and round (the counters, the envelope with the
// part), as when the envelope sat in the header. An envelope of its own in the header, or a part
// that began on the next line, measured 0.1 us slower up to 128 B (docs/lab/benchmarks.md). The
// part is then 16 bytes off a line: chunk boundaries of a scattered round may share a line of it
// (slower by a line, not wrong: each rank writes its own chunk only).
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
  static_assert(sizeof(Envelope) == kPartOffset, "a part follows its envelope");
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
      collective_release_(collective_release) {
  for (void* region : regions) {
    void* header = align_up(region, alignof(Header));
    peers_.push_back(Peer{static_cast<Header*>(header), static_cast<char*>(header) + sizeof(Header), 0});
  }
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

bool SharedSlots::free_for_next(int r) const {
  uint64_t& seen = peers_[static_cast<size_t>(r)].finished_seen;
  if (seen + static_cast<uint64_t>(depth_) > round_) return true;
  seen = load_round(header(r).finished);
  return seen + static_cast<uint64_t>(depth_) > round_;
}

void* SharedSlots::begin_round() { return mine(++round_); }

void SharedSlots::publish(uint64_t round, int tag, size_t bytes) {
  Header& me = my_header();
  Envelope& envelope = envelope_of(rank_, round);
  envelope.tag = tag;
  envelope.bytes = bytes;
  // Release: whoever sees the new round sees the part and its envelope too.
  store_round(me.published, round);
}

bool SharedSlots::published(int r, uint64_t round) const { return load_round(header(r).published) >= round; }

void SharedSlots::publish_reduced(uint64_t round) { store_round(my_header().reduced, round); }

bool SharedSlots::reduced(int r, uint64_t round) const { return load_round(header(r).reduced) >= round; }

void SharedSlots::finish(uint64_t round) { store_round(my_header().finished, round); }

const void* SharedSlots::part(int r, uint64_t round) const { return slot_of(r, round) + kPartOffset; }

void* SharedSlots::mine(uint64_t round) { return slot_of(rank_, round) + kPartOffset; }

int SharedSlots::tag(int r, uint64_t round) const { return envelope_of(r, round).tag; }

size_t SharedSlots::bytes(int r, uint64_t round) const { return envelope_of(r, round).bytes; }

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

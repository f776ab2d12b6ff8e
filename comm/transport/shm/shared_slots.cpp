// Implements comm/transport/shm/shared_slots.h (the contract is documented there).
#include "comm/transport/shm/shared_slots.h"

#include <atomic>
#include <new>

#include "comm/transport/envelope.h"
#include "core/error.h"

namespace ringdp::comm {

// One rank's header, on a cache line of its own so that peers polling `published` do not share
// a line with the part being written. Each slot's envelope sits beside it.
struct alignas(64) SharedSlots::Header {
  uint64_t published;  // the last round this rank published (atomic_ref: other processes read it)
  uint64_t reduced;  // the last round whose reduced chunk this rank published (scattered rounds)
  int32_t tag[2];
  uint64_t bytes[2];
  // The announced call: sequence mod 2^32 in the high half, its tag in the low (0: none yet). One
  // word, so that a reader never pairs one call's sequence with another's tag.
  uint64_t call;
};

// MPI's shared window places a rank's segment wherever its layout puts it (Open MPI: 8-byte
// aligned). The headers need a cache line each, so each region has room to align it; the
// mappings are page-aligned in every process, so all ranks align a region to the same byte.
size_t SharedSlots::region_bytes(size_t slot_bytes) {
  return alignof(Header) + sizeof(Header) + 2 * slot_bytes;
}

namespace {
// The round counters live in memory other processes read and write: atomic_ref over plain fields,
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

SharedSlots::SharedSlots(int rank, std::vector<void*> regions, size_t slot_bytes, bool yield_while_waiting,
                         std::function<void()> release, bool collective_release)
    : rank_(rank),
      slot_bytes_(slot_bytes),
      yield_(yield_while_waiting),
      release_(std::move(release)),
      collective_release_(collective_release) {
  for (void* region : regions) {
    void* header = align_up(region, alignof(Header));
    peers_.push_back(Peer{static_cast<Header*>(header), static_cast<char*>(header) + sizeof(Header)});
  }
  auto* mine = new (peers_[static_cast<size_t>(rank)].header) Header{};
  store_round(mine->published, 0);
  store_round(mine->reduced, 0);
  store_round(mine->call, 0);
}

SharedSlots::~SharedSlots() { release(true); }

void SharedSlots::release(bool free) {
  auto release = std::move(release_);
  release_ = nullptr;
  if (free && release) release();
}

void* SharedSlots::begin_round() {
  ++round_;
  return peers_[static_cast<size_t>(rank_)].data + static_cast<size_t>(slot()) * slot_bytes_;
}

void SharedSlots::publish(int tag, size_t bytes) {
  Header& mine = *peers_[static_cast<size_t>(rank_)].header;
  mine.tag[slot()] = tag;
  mine.bytes[slot()] = bytes;
  // Release: whoever sees the new round sees the part and its envelope too.
  store_round(mine.published, round_);
}

bool SharedSlots::published(int r) const { return load_round(header(r).published) >= round_; }

void SharedSlots::publish_reduced() {
  store_round(peers_[static_cast<size_t>(rank_)].header->reduced, round_);
}

bool SharedSlots::reduced(int r) const { return load_round(header(r).reduced) >= round_; }

const void* SharedSlots::part(int r) const {
  return peers_[static_cast<size_t>(r)].data + static_cast<size_t>(slot()) * slot_bytes_;
}

int SharedSlots::tag(int r) const { return header(r).tag[slot()]; }

size_t SharedSlots::bytes(int r) const { return header(r).bytes[slot()]; }

void SharedSlots::announce(uint64_t sequence, int tag) {
  std::atomic_ref<uint64_t>(peers_[static_cast<size_t>(rank_)].header->call)
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

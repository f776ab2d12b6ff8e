// Implements comm/shared_slots.h (the contract is documented there).
#include "comm/shared_slots.h"

#include <atomic>
#include <new>

namespace ringdp::comm {

// One rank's header, on a cache line of its own so that peers polling `published` do not share
// a line with the part being written. Each slot's envelope sits beside it.
struct alignas(64) SharedSlots::Header {
  uint64_t published;  // the last round this rank published (atomic_ref: other processes read it)
  uint64_t reduced;  // the last round whose reduced chunk this rank published (scattered rounds)
  int32_t tag[2];
  uint64_t bytes[2];
};

// MPI's shared window places a rank's segment wherever its layout puts it (Open MPI: 8-byte
// aligned). The headers need a cache line each, so each region has room to align it; the
// mappings are page-aligned in every process, so all ranks align a region to the same byte.
size_t SharedSlots::region_bytes(size_t slot_bytes) {
  return alignof(Header) + sizeof(Header) + 2 * slot_bytes;
}

namespace {
void* align_up(void* p, size_t alignment) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<void*>((at + alignment - 1) / alignment * alignment);
}
}  // namespace

SharedSlots::SharedSlots(int rank, std::vector<void*> regions, size_t slot_bytes, bool yield_while_waiting,
                         std::function<void()> release)
    : rank_(rank), slot_bytes_(slot_bytes), yield_(yield_while_waiting), release_(std::move(release)) {
  for (void* region : regions) {
    void* header = align_up(region, alignof(Header));
    peers_.push_back(Peer{static_cast<Header*>(header), static_cast<char*>(header) + sizeof(Header)});
  }
  auto* mine = new (peers_[static_cast<size_t>(rank)].header) Header{};
  std::atomic_ref<uint64_t>(mine->published).store(0, std::memory_order_release);
  std::atomic_ref<uint64_t>(mine->reduced).store(0, std::memory_order_release);
}

SharedSlots::~SharedSlots() {
  if (release_) release_();
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
  std::atomic_ref<uint64_t>(mine.published).store(round_, std::memory_order_release);
}

bool SharedSlots::published(int r) const {
  auto& published = const_cast<uint64_t&>(header(r).published);
  return std::atomic_ref<uint64_t>(published).load(std::memory_order_acquire) >= round_;
}

void SharedSlots::publish_reduced() {
  Header& mine = *peers_[static_cast<size_t>(rank_)].header;
  std::atomic_ref<uint64_t>(mine.reduced).store(round_, std::memory_order_release);
}

bool SharedSlots::reduced(int r) const {
  auto& reduced = const_cast<uint64_t&>(header(r).reduced);
  return std::atomic_ref<uint64_t>(reduced).load(std::memory_order_acquire) >= round_;
}

const void* SharedSlots::part(int r) const {
  return peers_[static_cast<size_t>(r)].data + static_cast<size_t>(slot()) * slot_bytes_;
}

int SharedSlots::tag(int r) const { return header(r).tag[slot()]; }

size_t SharedSlots::bytes(int r) const { return header(r).bytes[slot()]; }

}  // namespace ringdp::comm

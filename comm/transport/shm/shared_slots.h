// Folder comm/transport/shm/: memory shared by the ranks of one host (MPI-3 shared windows):
// these slots, the shared allocations behind Communicator::allocate_shared, the /dev/shm check.
//
// SharedSlots: an MPI-3 shared-memory window over the ranks of a job that runs on one host, in
// which every rank owns two slots and uses them in alternate rounds. A round: each rank copies
// its part into its slot and publishes the round number (a release store); the others wait for
// that number (acquire loads) and read the part in place. One cache-line handoff per peer
// instead of MPI's message path: 0.11 us per exchange against MPI_Allreduce's 0.4 us on 2 ranks
// here (docs/benchmarks.md). comm/algorithms/all_reduce_shared.cpp is the algorithm on top.
//
// Why two slots suffice: a rank writes round k + 2 into the slot of round k only after it has
// finished round k + 1, which needs every peer's part of round k + 1, and a peer publishes that
// only after it has finished reading round k. A scattered round (comm/algorithms/all_reduce_shared.cpp) adds
// a second publication, of the reduced chunk a rank wrote back into its own slot; a rank finishes
// such a round only after every peer's, which that peer makes after its reads of the round before.
//
// Every part carries the collective's envelope (comm/transport/envelope.h: kind, dtype, sequence) and its
// byte count, so ranks in different collectives are reported, as over MPI, instead of reading
// each other's data. Tested by tests/mpi/test_collectives.cpp (algorithm shared_memory, np=1-4)
// and tests/unit/test_shared_slots.cpp (forked processes over plain shared memory).
//
// The header also carries what each rank is calling now (announce), for every collective and
// whatever its algorithm: a rank waiting on a peer that is in the same collective by another
// algorithm (the ring against shared memory or native) finds it there, where no message would
// ever tell it (docs/errors.md, "What the always-on check covers").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace ringdp::comm {

class SharedSlots {
 public:
  /// The bytes of shared memory each rank's region needs (its header and two slots of
  /// `slot_bytes`, the most one rank's part may hold in one round).
  static size_t region_bytes(size_t slot_bytes);

  /// Over `regions[r]`, rank r's region (region_bytes(slot_bytes), mapped by every rank; every
  /// rank passes the same slot_bytes, a multiple of 64). Zeroes this rank's header: the caller
  /// orders that before any peer reads it (a barrier). `release` frees the shared memory when the
  /// slots go (MpiTransport::enable_shared_slots: the MPI window, which every rank frees together;
  /// shm_segment.h: this rank's mapping, which it unmaps alone: `collective_release` false).
  SharedSlots(int rank, std::vector<void*> regions, size_t slot_bytes, bool yield_while_waiting,
              std::function<void()> release, bool collective_release = true);
  ~SharedSlots();
  /// Frees the shared memory now (collective, as its `release`), or with `free` false leaves it
  /// to MPI_Finalize or the abort (a peer will not free its part); once. The slots are unusable
  /// after.
  void release(bool free);
  SharedSlots(const SharedSlots&) = delete;
  SharedSlots& operator=(const SharedSlots&) = delete;

  int rank() const { return rank_; }
  /// Whether freeing them needs every rank (MPI_Win_free): a leaving rank then waits for its peers.
  bool collective_release() const { return collective_release_; }
  int size() const { return static_cast<int>(peers_.size()); }
  /// Bytes one rank's part may hold in one round; a longer message takes several rounds.
  size_t slot_bytes() const { return slot_bytes_; }
  /// Whether a wait should give the core away between polls (ranks outnumber cores).
  bool yield_while_waiting() const { return yield_; }

  /// Starts the next round and returns where this rank writes its part (slot_bytes()).
  void* begin_round();
  /// Publishes this rank's part of the round: `bytes` long, of the collective `tag` names.
  void publish(int tag, size_t bytes);
  /// Whether rank r has published its part of the current round.
  bool published(int r) const;
  /// The second half of a scattered round (comm/algorithms/all_reduce_shared.cpp): this rank has written
  /// its reduced chunk back into its own slot, where the others copy it from.
  void publish_reduced();
  /// Whether rank r has published its reduced chunk of the current round.
  bool reduced(int r) const;
  /// Rank r's part of the current round, its envelope tag and byte count (once published).
  const void* part(int r) const;
  int tag(int r) const;
  size_t bytes(int r) const;

  /// Says which collective this rank is in now: its sequence number and envelope tag. A store to
  /// this rank's header, which peers read only when a wait has gone on a while.
  void announce(uint64_t sequence, int tag);
  /// Throws a ringdp::Error when rank r has announced the collective this rank announced (same
  /// sequence number) under another tag: another kind, dtype, op or algorithm.
  void check_same_call(int r) const;

 private:
  struct Header;
  struct Peer {
    Header* header;  // in the shared memory
    char* data;  // two slots of slot_bytes_
  };
  const Header& header(int r) const { return *peers_[static_cast<size_t>(r)].header; }
  int slot() const { return static_cast<int>(round_ & 1u); }

  int rank_;
  std::vector<Peer> peers_;
  size_t slot_bytes_;
  bool yield_;
  std::function<void()> release_;
  bool collective_release_;
  uint64_t round_ = 0;  // rounds begun; every rank begins the same ones
};

}  // namespace ringdp::comm

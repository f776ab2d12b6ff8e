// Folder comm/transport/shm/: memory shared by the ranks of one host (MPI-3 shared windows):
// these slots, the shared allocations behind Communicator::allocate_shared, the /dev/shm check.
//
// SharedSlots: an MPI-3 shared-memory window over the ranks of a job that runs on one host, in
// which every rank owns a ring of `depth` slots. A round: each rank copies its part into a slot
// and publishes the round number (a release store); the others wait for that number (acquire
// loads) and read the part in place. One cache-line handoff per peer instead of MPI's message
// path: 0.11 us per exchange against MPI_Allreduce's 0.4 us on 2 ranks here (docs/benchmarks.md).
// comm/algorithms/all_reduce_shared.cpp is the algorithm on top.
//
// Why a ring, not two slots used in turn: with two, every round is a rendezvous, and on a host
// where other work runs a rank often waits for a peer that is not scheduled: about a time slice
// per round, 2.6 s of a 100 MB DDP step beside two busy loops (docs/lab/benchmarks.md, "Beside
// two busy loops"). With a ring a rank that runs publishes rounds ahead and does every round whose
// parts are there, so a descheduled peer costs a handoff per ring, not per round.
//
// Which slot a round takes (Placement): a call's only small round, slot round mod depth, so that
// a reader knows where to look before it reads anything; a round of a longer call, the slot of
// those free that was used last, so that ranks in step keep reusing two slots that stay in cache
// (cycling through the ring measured 5-10% slower from 1 MiB on an idle host). The writer says
// which in its header (slot_of), published with the round.
//
// When a slot may be written again: only once every rank (itself included) has said it finished
// reading the round the slot last held (`finish`, a release store the writer loads with
// acquire). A scattered round (comm/algorithms/all_reduce_shared.cpp) adds a second
// publication, of the reduced chunk a rank wrote back into its own slot.
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
#include <string>
#include <vector>

namespace ringdp::comm {

class SharedSlots {
 public:
  /// Slots in each rank's ring with `ranks` ranks on the host and parts of up to `slot_bytes`:
  /// the power of two that keeps a host's rings within about 12 MiB (2 ranks: 16 slots of 256
  /// KiB), at least 2 and at most kMaxDepth. Every rank computes the same.
  static int depth(size_t slot_bytes, int ranks);
  static constexpr int kMaxDepth = 16;
  /// The bytes of shared memory each rank's region needs: its header and its ring.
  static size_t region_bytes(size_t slot_bytes, int ranks);
  /// What the regions are, for an error that says /dev/shm is too small for them.
  static std::string space_text(size_t slot_bytes, int ranks);

  /// Over `regions[r]`, rank r's region (region_bytes(slot_bytes, regions.size()), mapped by
  /// every rank; every rank passes the same slot_bytes, a multiple of 64). Zeroes this rank's
  /// header: the caller orders that before any peer reads it (a barrier). `release` frees the
  /// shared memory when the slots go (MpiTransport::enable_shared_slots: the MPI window, which
  /// every rank frees together; shm_segment.h: this rank's mapping, which it unmaps alone:
  /// `collective_release` false).
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
  int depth() const { return depth_; }
  /// Whether a wait should give the core away between polls (ranks outnumber cores).
  bool yield_while_waiting() const { return yield_; }

  /// Whether this rank's last multi-round call found a peer descheduled, so that the next runs
  /// ahead from its start (comm/algorithms/all_reduce_shared.cpp). This rank's alone.
  bool run_ahead() const { return run_ahead_; }
  void set_run_ahead(bool on) { run_ahead_ = on; }
  /// Rounds this rank has begun; every rank begins the same ones, numbered from 1.
  uint64_t begun() const { return round_; }

  /// Where a round lies in its writer's ring. Every rank derives it from the round's byte count
  /// and its call's, so readers look where the writer wrote (a rank that disagrees has another
  /// count, which the envelope check reports).
  enum class Placement : uint8_t {
    /// A call's only round, reduced whole (every small all-reduce): slot round mod depth, whose
    /// address a reader knows before it looks, the part at its start; the envelope in the header,
    /// on the line the reader has just loaded to see the round published. As before the ring:
    /// two lines move for a part under 64 bytes.
    lone,
    /// A round of a longer call, reduced whole: the slot used last of those free (two in turn
    /// while the ranks keep pace, in cache; the ring once one runs ahead); the envelope at its
    /// start and the part on the envelope's line.
    whole,
    /// A round of a longer call, scattered: as whole, but the part on the next line (aligned
    /// copies and sums: a part 16 bytes off a line measured 4-8% slower from 4 MiB).
    scattered,
  };
  /// Whether rank r has finished with what the next round, placed so, would overwrite.
  bool free_for_next(int r, Placement placement) const;
  /// Begins round begun() + 1 (once free_for_next holds for every rank) and returns where this
  /// rank writes its part (slot_bytes()).
  void* begin_round(Placement placement);
  /// Publishes this rank's part of `round`: `bytes` long, of the collective `tag` names.
  void publish(uint64_t round, int tag, size_t bytes);
  /// Whether rank r has published its part of `round`.
  bool published(int r, uint64_t round) const;
  /// The second half of a scattered round (comm/algorithms/all_reduce_shared.cpp): this rank has
  /// written its reduced chunk of `round` back into its own slot, where the others copy it from.
  void publish_reduced(uint64_t round);
  /// Whether rank r has published its reduced chunk of `round`.
  bool reduced(int r, uint64_t round) const;
  /// This rank reads no slot of `round` or before any more: their writers may reuse them. In
  /// round order.
  void finish(uint64_t round);
  /// Whether rank r placed `round` as `placement` says (false: its call has another count).
  bool placed(int r, uint64_t round, Placement placement) const;
  /// Rank r's part of `round`, its envelope tag and byte count (once published and placed).
  const void* part(int r, uint64_t round, Placement placement) const;
  int tag(int r, uint64_t round, Placement placement) const;
  size_t bytes(int r, uint64_t round, Placement placement) const;
  /// This rank's own part of `round`, where it writes its part and its reduced chunk.
  void* mine(uint64_t round, Placement placement);
  /// After every rank refused `round` alike (comm/refused_alike.h): skips the rounds some rank
  /// may have begun ahead of it, so that all begin the same next round, and frees them.
  void refused(uint64_t round);

  /// Says which collective this rank is in now: its sequence number and envelope tag. A store to
  /// this rank's header, which peers read only when a wait has gone on a while.
  void announce(uint64_t sequence, int tag);
  /// Throws a ringdp::Error when rank r has announced the collective this rank announced (same
  /// sequence number) under another tag: another kind, dtype, op or algorithm.
  void check_same_call(int r) const;

 private:
  struct Header;
  struct Envelope;
  // A slot is a line longer than its part: room for a whole or scattered round's envelope.
  static constexpr size_t kSlotHead = 64;
  // Marks a lone round in the header's slot_of, so that a reader expecting another placement (a
  // rank whose call has another count) is told, not left to read a part as an envelope.
  static constexpr uint8_t kLoneBit = 0x80;
  struct Peer {
    Header* header;  // in the shared memory
    char* data;  // depth_ slots, each kSlotHead + slot_bytes_ long
    // Its `finished` as last loaded: it only grows, so a slot free by this needs no load.
    mutable uint64_t finished_seen;
  };
  const Header& header(int r) const { return *peers_[static_cast<size_t>(r)].header; }
  Header& my_header() { return *peers_[static_cast<size_t>(rank_)].header; }
  size_t entry(uint64_t round) const {
    return static_cast<size_t>(round & static_cast<uint64_t>(depth_ - 1));
  }
  // Where `round`'s slot of rank r's ring begins (its envelope).
  char* slot_of(int r, uint64_t round, Placement placement) const;
  Envelope& envelope_of(int r, uint64_t round, Placement placement) const {
    return *reinterpret_cast<Envelope*>(slot_of(r, round, placement));
  }
  static constexpr size_t offset(Placement placement) {
    return placement == Placement::lone ? 0 : placement == Placement::whole ? 16 : 64;
  }
  // Whether rank r has finished the rounds up to `round`: from what was seen, else loaded.
  bool finished_by(int r, uint64_t round) const;
  // The slot for round_ placed `whole` or `scattered`: of those every rank has finished, the one
  // used last, still in cache.
  size_t recent_slot();

  int rank_;
  std::vector<Peer> peers_;
  size_t slot_bytes_;
  int depth_;
  bool yield_;
  std::function<void()> release_;
  bool collective_release_;
  uint64_t round_ = 0;  // rounds begun
  bool run_ahead_ = false;
  std::vector<uint64_t> last_round_;  // the round each slot of this rank's ring last held (0: none)
  std::vector<uint8_t> my_slots_;  // this rank's slot of each round, by round mod depth
  std::vector<bool> my_lone_;  // whether this rank began each round lone, by round mod depth
};

}  // namespace ringdp::comm

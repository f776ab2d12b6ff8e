// SharedAllocations: the memory behind Communicator::allocate_shared. Each allocation is an MPI-3
// shared window over every rank of a job that runs on one host; rank r's tensor is its own
// segment, and every rank can load and store every peer's segment (MPI_Win_shared_query gives
// their bases). The direct all-reduce (comm/algorithms/all_reduce_shared_direct.cpp) asks find() whether a
// buffer lies in one, and reads and writes the peers' buffers at the same offset.
//
// Lifetime: freeing a window (MPI_Win_free) is collective, and ranks drop their tensors at their
// own times, so a tensor's death frees nothing: the windows stay until release(), which the
// communicator calls when it goes, where the shared-memory slots go too. A tensor used after its
// communicator is gone reads freed memory (docs/library.md says so).
//
// Tested by tests/mpi/test_shared_allocation.cpp (np 1-4).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/dtype.h"
#include "tensor/tensor.h"

namespace ringdp::comm {

class Transport;

/// Where a buffer lies among a communicator's shared allocations: which one, at what byte
/// offset of this rank's segment. The direct all-reduce publishes it so that peers compare.
struct SharedPlace {
  int64_t allocation = -1;
  int64_t offset = 0;
  bool operator==(const SharedPlace&) const = default;
};

class SharedAllocations {
 public:
  SharedAllocations() = default;
  ~SharedAllocations() { release(); }
  SharedAllocations(const SharedAllocations&) = delete;
  SharedAllocations& operator=(const SharedAllocations&) = delete;

  /// Collective over `transport`'s ranks (an MPI transport whose ranks all share this host, which
  /// the caller checked): compares every rank's shape and dtype (an Error on every rank, naming
  /// the first rank that differs from rank 0 and both values), allocates a window of
  /// shape · dtype bytes per rank and returns this rank's segment, zeroed. An Error when MPI's
  /// window is not in the unified memory model (plain loads and stores would not see each other).
  void* allocate(Transport& transport, const Shape& shape, DType dtype);

  /// The allocation holding all of [data, data + bytes) in this rank's segment; nothing when none
  /// does (a linear look over the allocations: a communicator holds a few).
  std::optional<SharedPlace> find(const void* data, size_t bytes) const;
  /// Rank r's segment of allocation `allocation`, `offset` bytes in.
  char* at(int64_t allocation, int r, int64_t offset) const {
    return windows_[static_cast<size_t>(allocation)].segments[static_cast<size_t>(r)] + offset;
  }
  bool empty() const { return windows_.empty(); }

  /// Frees every window: collective over the ranks that allocated them (each calls it once, in
  /// the same place: the communicator's leaving, comm/world/departures.h). Skipped while an exception
  /// unwinds (the rank is on its way to MPI_Abort and its peers may never come), after
  /// MPI_Finalize, and with `free` false (a peer will not free its part: the windows stay to
  /// MPI_Finalize or the abort). Either way no allocation is left to find.
  void release(bool free = true);

 private:
  struct Window {
    std::vector<char*> segments;  // rank r's segment, mapped in this process
    char* mine;  // this rank's
    size_t bytes;  // of each segment
    std::function<void()> free;
  };
  std::vector<Window> windows_;
};

}  // namespace ringdp::comm

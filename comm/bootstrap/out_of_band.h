// OutOfBand: the exchange a transport is built from, before it can carry a message itself (UCX's
// worker addresses, the ranks' hosts, the options every rank must agree on). Two kinds: over an
// MPI transport's collectives (comm/transport/ucx/, for RINGDP_TRANSPORT=ucx under mpirun) and
// over a key-value store (comm/bootstrap/store_out_of_band.h, for launchers without MPI).
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ringdp::comm {

class OutOfBand {
 public:
  virtual ~OutOfBand() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Every rank's `mine`, in rank order (lengths may differ). Collective over the ranks, which
  /// call it the same number of times.
  virtual std::vector<std::vector<char>> all_gather(std::span<const char> mine) = 0;
  /// An exchange over `members` (ranks of this one, in the order of the new ranks), named `name`,
  /// whose waits last at most `timeout`: collective over exactly those members, which pass the
  /// same name and list; others call nothing. Null when this kind cannot make one (MPI makes its
  /// groups itself).
  virtual std::unique_ptr<OutOfBand> subset(const std::string& name, std::span<const int> members,
                                            std::chrono::milliseconds timeout) = 0;
  /// This rank cannot go on (`why`): the ranks waiting for its next all_gather are told now, with
  /// `why`, instead of waiting out the timeout. A no-op where the exchange cannot carry it.
  virtual void fail(const std::string& why) { (void)why; }
};

}  // namespace ringdp::comm

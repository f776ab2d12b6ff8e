// TransportOutOfBand: comm/bootstrap/out_of_band.h over a transport's own collectives (an MPI
// transport's, for RINGDP_TRANSPORT=ucx or --backend ucx under mpirun: comm/transport/ucx/). Its
// all_gather exchanges the lengths, then every blob padded to the longest. MPI makes its groups
// itself, so there is no subset.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/bootstrap/out_of_band.h"
#include "comm/transport/transport.h"

namespace ringdp::comm {

class TransportOutOfBand final : public OutOfBand {
 public:
  /// Over `transport`'s ranks (not owned).
  explicit TransportOutOfBand(Transport& transport) : transport_(transport) {}
  int rank() const override { return transport_.rank(); }
  int size() const override { return transport_.size(); }
  std::unique_ptr<OutOfBand> subset(const std::string&, std::span<const int>,
                                    std::chrono::milliseconds) override {
    return nullptr;
  }
  std::vector<std::vector<char>> all_gather(std::span<const char> mine) override;

 private:
  Transport& transport_;
};

}  // namespace ringdp::comm

// RINGDP_DEBUG=DETAIL: before each collective the ranks exchange a fingerprint of the call
// (kind, op, dtype, count, root, sequence number, algorithm, and for the uneven forms a hash of
// the counts every rank passes alike) with a ring all-gather over the same transport
// (so it too has a deadline), and on any difference every rank reports the first one, naming the
// ranks and both calls, then ends the job instead of hanging or corrupting data.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {

struct Fingerprint {
  /// `count` of the uneven all_to_all, whose ranks send different amounts by design.
  static constexpr int64_t kPerRankCount = -1;
  int64_t kind, op, dtype, count, root, sequence, algorithm, layout = 0;
  std::string describe() const;
};

/// Returns an empty string when every rank made the same call, else the report.
std::string compare_fingerprints(CollectiveContext& ctx, const Fingerprint& mine);
/// The uneven all_to_all: every rank's send_counts gathered (N² words), then recv_counts[i] here
/// compared with rank i's send_counts[this rank]. Empty when all agree, else the report of the
/// first that differs. (Only the ranks that see a difference report; each ends the job.)
std::string compare_pairwise_counts(CollectiveContext& ctx, std::span<const int64_t> send_counts,
                                    std::span<const int64_t> recv_counts);
/// What DETAIL compares of the counts every rank passes alike (FNV-1a over them).
uint64_t counts_hash(std::span<const int64_t> counts);

}  // namespace ringdp::comm

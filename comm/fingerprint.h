// RINGDP_DEBUG=DETAIL: before each collective the ranks exchange a fingerprint of the call
// (kind, op, dtype, count, root, sequence number, algorithm) with a ring all-gather over the same transport
// (so it too has a deadline), and on any difference every rank reports the first one, naming the
// ranks and both calls, then ends the job instead of hanging or corrupting data.
#pragma once

#include <cstdint>
#include <string>

#include "comm/algorithms.h"

namespace ringdp::comm {

struct Fingerprint {
  int64_t kind, op, dtype, count, root, sequence, algorithm;
  std::string describe() const;
};

/// Returns an empty string when every rank made the same call, else the report.
std::string compare_fingerprints(CollectiveContext& ctx, const Fingerprint& mine);

}  // namespace ringdp::comm

// Soak mode (ringdp-bench --soak N): N collectives of random kinds, sizes, dtypes, ops and
// algorithms, every one checked; resident memory is sampled after a warm-up (the first tenth)
// and at the end, and must not grow. The random choices come from a counter-based generator
// keyed by the call number, so every rank makes the same ones.
#pragma once

#include <cstdint>

#include "comm/communicator.h"

namespace ringdp::bench {

struct SoakResult {
  int64_t collectives = 0;
  int64_t wrong = 0;  ///< summed over ranks
  double rss_after_warmup_mb = 0;
  double rss_at_end_mb = 0;  ///< the largest over ranks
};

SoakResult run_soak(comm::Communicator& comm, int64_t count, uint64_t seed);

}  // namespace ringdp::bench

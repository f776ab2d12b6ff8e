// Implements comm/envelope.h (the contract and the tag budget are documented there). Tested by
// tests/mpi (the suite again under RINGDP_TAG_UB=32767) and tests/cli/bench.sh envelope; the
// encoding by tests/unit/test_envelope.cpp.
#include "comm/envelope.h"

#include "core/error.h"

namespace ringdp::comm {

int sequence_bits_for(int tag_upper_bound) {
  int bits = 16;
  // The largest tag with `bits` sequence bits is 1 + ((2^bits - 1) << 6 | 63) = 2^(bits + 6).
  while (bits >= kMinSequenceBits && (int64_t{1} << (bits + 6)) > tag_upper_bound) --bits;
  RINGDP_CHECK(bits >= kMinSequenceBits, "MPI's tag upper bound (MPI_TAG_UB) is ", tag_upper_bound,
               "; ringdp's collective tags need at least ", int64_t{1} << (kMinSequenceBits + 6),
               " (6 bits of kind and dtype, ", kMinSequenceBits,
               " of sequence; the MPI standard guarantees 32767)");
  return bits;
}

}  // namespace ringdp::comm

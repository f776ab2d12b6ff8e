// Implements comm/transport/envelope.h (the contract and the tag budget are documented there). Tested by
// tests/mpi (the suite again under RINGDP_TAG_UB=32767), tests/mpi/mismatch.sh and
// tests/cli/bench.sh envelope; the encoding by tests/unit/test_envelope.cpp.
#include "comm/transport/envelope.h"

#include "core/error.h"

namespace ringdp::comm {

int sequence_bits_for(int tag_upper_bound) {
  int bits = 16;
  // The largest tag with `bits` sequence bits is 1 + ((2^bits - 1) << 12 | 4095) = 2^(bits + 12).
  while (bits >= kMinSequenceBits && (int64_t{1} << (bits + kCallBits)) > tag_upper_bound) --bits;
  RINGDP_CHECK(bits >= kMinSequenceBits, "MPI's tag upper bound (MPI_TAG_UB) is ", tag_upper_bound,
               "; ringdp's collective tags need at least ", int64_t{1} << (kMinSequenceBits + kCallBits),
               " (", kCallBits, " bits of kind, dtype, op and algorithm, ", kMinSequenceBits,
               " of sequence; the MPI standard guarantees 32767)");
  return bits;
}

std::string describe_tag(int tag) {
  if (tag < 1) return "no collective (tag " + std::to_string(tag) + ")";  // also keeps tag - 1 in range
  if (tag >= kUserTagBase) return "send/recv tag " + std::to_string(tag - kUserTagBase);
  const int v = tag - 1;
  const int call = (v >> 4) & 31;
  static constexpr CollectiveKind kReducing[] = {CollectiveKind::all_reduce, CollectiveKind::reduce,
                                                 CollectiveKind::reduce_scatter};
  static constexpr CollectiveKind kOthers[] = {CollectiveKind::broadcast, CollectiveKind::all_gather,
                                               CollectiveKind::barrier,   CollectiveKind::send,
                                               CollectiveKind::recv,      CollectiveKind::gather,
                                               CollectiveKind::scatter,   CollectiveKind::all_to_all};
  const CollectiveKind kind = call < 24 ? kReducing[call / 8] : kOthers[call - 24];
  const auto dtype = static_cast<DType>(v & 15);
  std::string text = std::string(kind_name(kind)) + " #" + std::to_string(v >> kCallBits);
  if (kind == CollectiveKind::send || kind == CollectiveKind::recv)
    return text + " (" + dtype_name(dtype) + ")";
  text += " (";
  if (kind != CollectiveKind::barrier) text += std::string(dtype_name(dtype)) + ", ";
  if (kind_reduces(kind)) text += std::string(reduce_op_name(static_cast<ReduceOp>(call % 8))) + ", ";
  const int wire = (v >> 9) & 7;
  const Algorithm algorithm = algorithm_of_wire(kind, wire);
  // Code 0 is auto's: the DETAIL check's own exchange carries it. Any other code the collective
  // has no algorithm for is shown as a code, not guessed.
  if (algorithm == Algorithm::automatic && wire != wire_code(Algorithm::automatic))
    return text + "algorithm code " + std::to_string(wire) + ")";
  return text + algorithm_name(algorithm) + ")";
}

}  // namespace ringdp::comm

// The collective tags of comm/transport/envelope.h: every (kind, dtype, op, algorithm, sequence mod 2^bits)
// its own tag, every tag under the MPI_TAG_UB the bits were chosen for, and the sequence wrapping at 2^bits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "comm/algorithm_table.h"
#include "comm/transport/envelope.h"
#include "core/error.h"

using namespace ringdp;
using comm::CollectiveKind;
using comm::encode_tag;
using comm::sequence_bits_for;

namespace {
const CollectiveKind kKinds[] = {
    CollectiveKind::all_reduce, CollectiveKind::reduce,         CollectiveKind::broadcast,
    CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::barrier,
    CollectiveKind::send,       CollectiveKind::recv,           CollectiveKind::gather,
    CollectiveKind::scatter,    CollectiveKind::all_to_all};
const DType kDTypes[] = {DType::float32, DType::float64, DType::int32, DType::int64,  DType::bfloat16,
                         DType::float16, DType::int8,    DType::uint8, DType::boolean};
const ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max,
                         ReduceOp::avg, ReduceOp::band, ReduceOp::bor, ReduceOp::bxor};
// The ops a kind's tag tells apart: every op for the kinds that reduce, none (one) for the rest.
std::vector<ReduceOp> ops_of(CollectiveKind kind) {
  if (comm::kind_reduces(kind)) return {std::begin(kOps), std::end(kOps)};
  return {ReduceOp::sum};
}
const comm::Algorithm kAlgorithms[] = {
    comm::Algorithm::automatic,    comm::Algorithm::ring,         comm::Algorithm::recursive_doubling,
    comm::Algorithm::tree,         comm::Algorithm::native,       comm::Algorithm::hierarchical,
    comm::Algorithm::rabenseifner, comm::Algorithm::shared_memory};
// The tag of an all-reduce in float32 by the ring, summing: the call most tests vary one field of.
int ring_tag(uint64_t sequence, int bits) {
  return encode_tag(CollectiveKind::all_reduce, DType::float32, ReduceOp::sum, comm::Algorithm::ring,
                    sequence, bits);
}
}  // namespace

TEST_CASE("sequence_bits_for takes the most bits whose largest tag fits, at most 16", "[envelope]") {
  // Bounds from the smallest that works up to ob1's, and each edge where one more bit fits.
  for (int ub : {16384, 20000, 32767, 32768, 65535, 65536, (1 << 22) - 1, (1 << 22), (1 << 23) - 1, (1 << 28),
                 std::numeric_limits<int>::max()}) {
    CAPTURE(ub);
    const int bits = sequence_bits_for(ub);
    REQUIRE(bits >= comm::kMinSequenceBits);
    REQUIRE(bits <= 16);
    const uint64_t last_sequence = (uint64_t{1} << bits) - 1;
    int largest = 0;
    for (CollectiveKind kind : kKinds)
      for (DType dtype : kDTypes)
        for (ReduceOp op : kOps)
          for (comm::Algorithm algorithm : kAlgorithms)
            largest = std::max(largest, encode_tag(kind, dtype, op, algorithm, last_sequence, bits));
    REQUIRE(largest <= ub);
    // Not one bit fewer than fits: a smaller window catches fewer skipped collectives.
    if (bits < 16) REQUIRE((int64_t{1} << (bits + 1 + comm::kCallBits)) > ub);
  }
  REQUIRE(sequence_bits_for(32767) == comm::kMinSequenceBits);
  REQUIRE(sequence_bits_for(16384) == comm::kMinSequenceBits);
  REQUIRE(sequence_bits_for((1 << 23) - 1) == 10);
  REQUIRE(sequence_bits_for(std::numeric_limits<int>::max()) == 16);
}

TEST_CASE("a tag bound too small for the minimum sequence bits is an error naming it", "[envelope]") {
  for (int ub : {16383, 1023, 0}) {
    CAPTURE(ub);
    REQUIRE_THROWS_AS(sequence_bits_for(ub), Error);
    REQUIRE_THROWS_WITH(sequence_bits_for(ub),
                        Catch::Contains("tag upper bound (MPI_TAG_UB) is " + std::to_string(ub) + ";"));
  }
}

TEST_CASE(
    "distinct kinds, dtypes, ops, algorithms and sequences give distinct tags, all above 0 and below "
    "user tags",
    "[envelope]") {
  for (int bits : {comm::kMinSequenceBits, 8}) {
    CAPTURE(bits);
    // Counted, not REQUIREd, per tag: 400,000 REQUIREs at 8 bits would take seconds.
    std::vector<bool> taken(size_t{1} << (bits + comm::kCallBits + 1));
    int64_t duplicates = 0, lowest = std::numeric_limits<int>::max(), highest = 0;
    const uint64_t sequences = uint64_t{1} << bits;
    for (CollectiveKind kind : kKinds)
      for (DType dtype : kDTypes)
        for (ReduceOp op : ops_of(kind))
          for (comm::Algorithm algorithm : kAlgorithms)
            for (uint64_t sequence = 0; sequence < sequences; ++sequence) {
              const int tag = encode_tag(kind, dtype, op, algorithm, sequence, bits);
              lowest = std::min<int64_t>(lowest, tag);
              highest = std::max<int64_t>(highest, tag);
              if (tag < 0 || static_cast<size_t>(tag) >= taken.size()) continue;  // caught by highest/lowest
              duplicates += taken[tag];
              taken[tag] = true;
            }
    REQUIRE(duplicates == 0);
    REQUIRE(lowest > 0);  // MPI tags are non-negative
    REQUIRE(highest <= int64_t{1} << (bits + comm::kCallBits));
    REQUIRE(highest < comm::kUserTagBase);
  }
}

TEST_CASE("the sequence wraps at 2^bits, and only there", "[envelope]") {
  for (int bits : {comm::kMinSequenceBits, 8, 16}) {
    CAPTURE(bits);
    const uint64_t period = uint64_t{1} << bits;
    for (uint64_t sequence : {uint64_t{0}, uint64_t{1}, period - 1, uint64_t{1} << 40}) {
      CAPTURE(sequence);
      const int tag = ring_tag(sequence, bits);
      REQUIRE(ring_tag(sequence + period, bits) == tag);
      REQUIRE(ring_tag(sequence + 3 * period, bits) == tag);
      // One skipped collective is never mistaken for the expected one (the envelope's promise).
      for (uint64_t ahead = 1; ahead < period; ahead = ahead * 2 + 1)
        REQUIRE(ring_tag(sequence + ahead, bits) != tag);
    }
  }
}

TEST_CASE("describe_tag reads back kind, sequence mod 2^bits, dtype, op and algorithm", "[envelope]") {
  using comm::Algorithm;
  REQUIRE(comm::describe_tag(ring_tag(8, 16)) == "all_reduce #8 (float32, sum, ring)");
  REQUIRE(comm::describe_tag(encode_tag(CollectiveKind::recv, DType::bfloat16, ReduceOp::sum,
                                        Algorithm::native, 65535, 16)) == "recv #65535 (bfloat16)");
  REQUIRE(comm::describe_tag(encode_tag(CollectiveKind::reduce_scatter, DType::int64, ReduceOp::max,
                                        Algorithm::native, 4 + 3, 2)) ==
          "reduce_scatter #3 (int64, max, native)");
  // auto's code is the DETAIL check's own exchange (an all-gather of int64 words).
  REQUIRE(comm::describe_tag(encode_tag(CollectiveKind::all_gather, DType::int64, ReduceOp::sum,
                                        Algorithm::automatic, 3, 8)) == "all_gather #3 (int64, auto)");
  // A code the collective has no algorithm for (no rank sends one) is shown as a code, not guessed.
  REQUIRE(comm::describe_tag(encode_tag(CollectiveKind::reduce_scatter, DType::int64, ReduceOp::max,
                                        Algorithm::rabenseifner, 3, 8)) ==
          "reduce_scatter #3 (int64, max, algorithm code 6)");
  // A call that does not reduce has no op in its tag: none is shown.
  REQUIRE(comm::describe_tag(encode_tag(CollectiveKind::broadcast, DType::int32, ReduceOp::sum,
                                        Algorithm::tree, 5, 8)) == "broadcast #5 (int32, tree)");
  REQUIRE(comm::describe_tag(encode_tag(CollectiveKind::barrier, DType::float32, ReduceOp::sum,
                                        Algorithm::dissemination, 2, 8)) == "barrier #2 (dissemination)");
  REQUIRE(comm::describe_tag(encode_tag(CollectiveKind::reduce, DType::boolean, ReduceOp::bxor,
                                        Algorithm::tree, 1, 8)) == "reduce #1 (bool, bxor, tree)");
  // The kinds added last take the call field's last codes (29..31), the pairwise exchange the ring's code.
  REQUIRE(comm::describe_tag(encode_tag(CollectiveKind::gather, DType::int8, ReduceOp::sum, Algorithm::tree,
                                        4, 8)) == "gather #4 (int8, tree)");
  REQUIRE(comm::describe_tag(encode_tag(CollectiveKind::scatter, DType::float16, ReduceOp::sum,
                                        Algorithm::native, 4, 8)) == "scatter #4 (float16, native)");
  REQUIRE(comm::describe_tag(encode_tag(CollectiveKind::all_to_all, DType::uint8, ReduceOp::sum,
                                        Algorithm::pairwise, 255, 8)) == "all_to_all #255 (uint8, pairwise)");
  REQUIRE(encode_tag(CollectiveKind::all_to_all, DType::uint8, ReduceOp::sum, Algorithm::pairwise, 255, 8) ==
          encode_tag(CollectiveKind::all_to_all, DType::uint8, ReduceOp::sum, Algorithm::ring, 255, 8));
  REQUIRE(((encode_tag(CollectiveKind::all_to_all, DType::float32, ReduceOp::sum, Algorithm::pairwise, 0, 8) -
            1) >>
               4 &
           31) == 31);
  // Every field read back, for every value: a field that spilled into its neighbour would not.
  for (CollectiveKind kind : kKinds)
    for (DType dtype : kDTypes)
      for (ReduceOp op : ops_of(kind))
        for (const comm::AlgorithmRow& row : comm::algorithm_table(kind)) {
          const Algorithm algorithm = row.algorithm;
          const std::string text = comm::describe_tag(encode_tag(kind, dtype, op, algorithm, 3, 16));
          CAPTURE(text);
          std::string want = std::string(comm::kind_name(kind)) + " #3 (";
          if (kind != CollectiveKind::barrier) want += dtype_name(dtype);
          if (kind == CollectiveKind::send || kind == CollectiveKind::recv) {
            REQUIRE(text == want + ")");
            continue;
          }
          if (kind != CollectiveKind::barrier) want += ", ";
          if (comm::kind_reduces(kind)) want += std::string(reduce_op_name(op)) + ", ";
          REQUIRE(text == want + comm::algorithm_name(algorithm) + ")");
        }
}

TEST_CASE("one field different, the tag differs: op and algorithm are checked like kind and dtype",
          "[envelope]") {
  using comm::Algorithm;
  for (int bits : {comm::kMinSequenceBits, 16}) {
    const int base = ring_tag(5, bits);
    for (ReduceOp op : kOps)
      if (op != ReduceOp::sum)
        REQUIRE(encode_tag(CollectiveKind::all_reduce, DType::float32, op, Algorithm::ring, 5, bits) != base);
    for (Algorithm algorithm : kAlgorithms)
      if (algorithm != Algorithm::ring)
        REQUIRE(encode_tag(CollectiveKind::all_reduce, DType::float32, ReduceOp::sum, algorithm, 5, bits) !=
                base);
  }
}

// The always-on check that ranks run the same collective: every message of an algorithm
// carries, in its MPI tag, the collective's kind, dtype, reduce op, algorithm and sequence number
// (modulo 2^bits), and the receiver posts its receive with MPI_ANY_TAG, then compares the tag and
// the byte count that arrived with what it expected. A rank that called a different collective,
// another dtype, op, algorithm or count is reported at its first exchange instead of hanging or
// corrupting data. The "header" is MPI's own envelope, so the check costs no extra message and no
// copy. What it cannot see (an algorithm that sends no message to the rank that waits) is listed
// in docs/errors.md, "What the always-on check covers".
//
// Tag budget. MPI guarantees tags up to MPI_TAG_UB, which may be as low as 32767 (the standard's
// minimum; Open MPI's UCX transport gives 2^23 - 1, its ob1 transport and MPICH 2^31 - 1 or near).
// A tag is 1 + ((sequence mod 2^bits) << 12 | algorithm << 9 | call << 4 | dtype), so it stays
// below 2^(bits + 12) + 1. `call` is kind and op in 5 bits: 8 × kind + op for the three kinds that
// reduce (0..23), 24 + the kind's place among the others (broadcast, all_gather, barrier, send,
// recv, gather, scatter, all_to_all: 24..31; the uneven forms of all_gather and all_to_all share
// their even form's code: what differs between ranks there is the length, which the receive checks). Kind and
// op apart would take 6 bits, and dtype, with 9 values, needs 4: folding the op into the kinds that have one
// keeps the call in 12 bits, so the standard's 32767 still leaves kMinSequenceBits. The rest of the budget:
// the communicator picks bits = min(16, the largest that fits under MPI_TAG_UB) at init, and refuses a bound
// that leaves fewer than kMinSequenceBits. At the standard's minimum that is 2 bits; every MPI here gives 16.
// Why wrap-around is safe: the tag does not select which message a receive takes (it takes any tag; MPI's
// in-order delivery between a pair of ranks on one communicator does), it only checks it. A skipped or extra
// collective is caught unless a rank is a whole multiple of 2^bits collectives ahead of its peer at that
// exchange, which a single skipped collective never is.
// User send/recv travel on a communicator of their own with the user's tag as it is; inside the
// process they are marked by kUserTagBase, which never reaches MPI.
#pragma once

#include <cstdint>
#include <string>

#include "comm/algorithm_table.h"
#include "comm/types.h"
#include "core/dtype.h"
#include "core/reduce_op.h"

namespace ringdp::comm {

/// Tags at or above this belong to user send/recv; the transport sends tag - kUserTagBase, on a
/// communicator of its own.
constexpr int kUserTagBase = 1 << 30;
/// Fewer sequence bits than this and the envelope check could miss a rank 2^bits collectives off.
constexpr int kMinSequenceBits = 2;
/// Bits below the sequence: dtype (4), kind and op (5), algorithm (3).
constexpr int kCallBits = 12;

/// Sequence bits that fit under MPI_TAG_UB (at most 16); fewer than kMinSequenceBits is an Error.
int sequence_bits_for(int tag_upper_bound);

// Each field has a fixed width: a value past it would carry into the field beside it, and two
// different calls could carry one tag. Each function below lists every
// enumerator with -Wswitch an error, so a new one stops the build there until it is listed, and
// the static_asserts then check that it still fits.
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
constexpr int largest_tag_dtype() {
  int largest = -1;
  for (int value = 0; value < 256; ++value) {
    switch (static_cast<DType>(value)) {
      case DType::float32:
      case DType::float64:
      case DType::int32:
      case DType::int64:
      case DType::bfloat16:
      case DType::float16:
      case DType::int8:
      case DType::uint8:
      case DType::boolean: largest = value;
    }
  }
  return largest;
}
constexpr int largest_tag_op() {
  int largest = -1;
  for (int value = 0; value < 256; ++value) {
    switch (static_cast<ReduceOp>(value)) {
      case ReduceOp::sum:
      case ReduceOp::prod:
      case ReduceOp::min:
      case ReduceOp::max:
      case ReduceOp::avg:
      case ReduceOp::band:
      case ReduceOp::bor:
      case ReduceOp::bxor: largest = value;
    }
  }
  return largest;
}
/// Whether a collective of this kind carries a reduce op (it is in its tag and its messages).
constexpr bool kind_reduces(CollectiveKind kind) {
  return kind == CollectiveKind::all_reduce || kind == CollectiveKind::reduce ||
         kind == CollectiveKind::reduce_scatter;
}

/// The tag's 5-bit call field: kind and, for the kinds that reduce, op (the comment at the top).
constexpr int call_code(CollectiveKind kind, ReduceOp op) {
  switch (kind) {
    case CollectiveKind::all_reduce: return static_cast<int>(op);
    case CollectiveKind::reduce: return 8 + static_cast<int>(op);
    case CollectiveKind::reduce_scatter: return 16 + static_cast<int>(op);
    case CollectiveKind::broadcast: return 24;
    case CollectiveKind::all_gather: return 25;
    case CollectiveKind::barrier: return 26;
    case CollectiveKind::send: return 27;
    case CollectiveKind::recv: return 28;
    case CollectiveKind::gather: return 29;
    case CollectiveKind::scatter: return 30;
    case CollectiveKind::all_to_all: return 31;
  }
  return 31;
}
#pragma GCC diagnostic pop

// The call field uses all 32 codes, and a collective may have at most 7 algorithms besides auto
// (comm/algorithm_table.cpp checks each table's codes): more of either needs a wider field. Widening a field
// costs every MPI_TAG_UB one sequence bit, and the standard's guaranteed 32767 its last (sequence_bits_for
// then refuses it: lower kMinSequenceBits or fold a field, as the call field folds op into kind). A new
// CollectiveKind stops the build in call_code's switch until it is given a code there.
static_assert(largest_tag_op() <= 7,
              "ReduceOp outgrew the 8 ops per kind of the tag's call field (comment above)");
static_assert(largest_tag_dtype() <= 15,
              "DType outgrew the tag's 4-bit dtype field: widen it (comment above)");

/// A collective's tag. Calls without a reduction may pass any op: it is not part of their tag.
inline int encode_tag(CollectiveKind kind, DType dtype, ReduceOp op, Algorithm algorithm, uint64_t sequence,
                      int sequence_bits) {
  const uint64_t mask = (uint64_t{1} << sequence_bits) - 1;
  return 1 + static_cast<int>(
                 ((sequence & mask) << kCallBits) | (static_cast<uint64_t>(wire_code(algorithm)) << 9) |
                 (static_cast<uint64_t>(call_code(kind, op)) << 4) | static_cast<uint64_t>(dtype));
}

/// "all_reduce #8 (float32, sum, ring)" from a collective tag (the sequence number modulo 2^bits);
/// the op only for the collectives that reduce, the dtype not for a barrier; "send/recv tag 9" for a
/// user message (kUserTagBase and up).
std::string describe_tag(int tag);

}  // namespace ringdp::comm

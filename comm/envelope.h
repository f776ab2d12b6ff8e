// The always-on check that ranks run the same collective: every message of an algorithm
// carries, in its MPI tag, the collective's kind, dtype and sequence number (mod 2^16), and the
// receiver posts its receive with MPI_ANY_TAG, then compares the tag and the byte count that
// arrived with what it expected. A rank that called a different collective, another dtype or a
// different count is reported at its first exchange instead of hanging or corrupting data. The
// "header" is MPI's own envelope, so the check costs no extra message and no copy.
#pragma once

#include <cstdint>
#include <string>

#include "comm/types.h"
#include "kernels/dtype.h"

namespace ringdp::comm {

/// Tags at or above this belong to user send/recv, which travel on a communicator of their own.
constexpr int kUserTagBase = 1 << 24;

inline int encode_tag(CollectiveKind kind, DType dtype, uint64_t sequence) {
  return 1 + static_cast<int>(((sequence & 0xFFFF) << 6) | (static_cast<uint64_t>(kind) << 3) |
                              static_cast<uint64_t>(dtype));
}

/// "all_reduce #8 (float32)" from a collective tag (the sequence number modulo 65536).
inline std::string describe_tag(int tag) {
  const int v = tag - 1;
  const auto kind = static_cast<CollectiveKind>((v >> 3) & 7);
  std::string text = std::string(kind_name(kind)) + " #" + std::to_string(v >> 6);
  if (kind != CollectiveKind::barrier)
    text += std::string(" (") + dtype_name(static_cast<DType>(v & 7)) + ")";
  return text;
}

}  // namespace ringdp::comm

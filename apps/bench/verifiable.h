// Inputs whose exact collective result every rank can compute on its own (the idea of
// nccl-tests' verifiable inputs): small integers, exact in every dtype including bfloat16,
// depending on rank and index so a misplaced chunk shows. prod uses powers of two (1 or 2), so
// the product stays exact for up to 24 ranks in float32.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/reduce_into.h"

namespace ringdp::bench {

inline double verifiable_input(int rank, int64_t index, ReduceOp op) {
  switch (op) {
    case ReduceOp::prod: return static_cast<double>((rank + index) % 2 + 1);
    case ReduceOp::min:
    case ReduceOp::max: return static_cast<double>((rank * 13 + index * 7) % 101 - 50);
    // Bit patterns that differ by rank and index, so a misplaced chunk shows; under 2^24, exact
    // as a double.
    case ReduceOp::band:
    case ReduceOp::bor:
    case ReduceOp::bxor: return static_cast<double>(((rank + 1) * 0x9E37 + index * 0x51) & 0xFFFFFF);
    default: return static_cast<double>((rank * 7 + index) % 31 - 10);
  }
}

inline double verifiable_result(int size, int64_t index, ReduceOp op) {
  double acc = verifiable_input(0, index, op);
  for (int r = 1; r < size; ++r) {
    const double v = verifiable_input(r, index, op);
    switch (op) {
      case ReduceOp::prod: acc *= v; break;
      case ReduceOp::min: acc = std::min(acc, v); break;
      case ReduceOp::max: acc = std::max(acc, v); break;
      case ReduceOp::band:
        acc = static_cast<double>(static_cast<int64_t>(acc) & static_cast<int64_t>(v));
        break;
      case ReduceOp::bor:
        acc = static_cast<double>(static_cast<int64_t>(acc) | static_cast<int64_t>(v));
        break;
      case ReduceOp::bxor:
        acc = static_cast<double>(static_cast<int64_t>(acc) ^ static_cast<int64_t>(v));
        break;
      default: acc += v; break;
    }
  }
  return op == ReduceOp::avg ? acc / size : acc;
}

}  // namespace ringdp::bench

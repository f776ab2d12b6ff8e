// Inputs whose exact collective result every rank can compute on its own (the idea of
// nccl-tests' verifiable inputs): small integers, exact in every dtype including bfloat16 and
// float16, depending on rank and index so a misplaced chunk shows. prod uses powers of two (1 or
// 2), so the product stays exact for up to 24 ranks in float32 (float16 reaches infinity past 15,
// and held_as says so). Inputs and results are as the dtype holds them (held_as): 8- and 32-bit
// integers wrap, bool is nonzero-or-not.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/reduce_into.h"

namespace ringdp::bench {

// Wrapping once at the end equals wrapping every step for sum and prod (arithmetic modulo 2^bits)
// and changes nothing for min, max and the bitwise ops, whose inputs already wrapped; bool's
// inputs are 0 or 1, so its "any" and "all" are the sum's and product's being nonzero.
inline double held_as(DType dtype, double v) {
  const auto integer = static_cast<int64_t>(v);
  switch (dtype) {
    case DType::int8: return static_cast<int8_t>(static_cast<uint8_t>(integer & 0xff));
    case DType::uint8: return static_cast<uint8_t>(integer & 0xff);
    case DType::int32: return static_cast<int32_t>(static_cast<uint32_t>(integer));
    case DType::boolean: return v != 0 ? 1 : 0;
    case DType::float16:
      return std::fabs(v) >= 65520 ? std::copysign(std::numeric_limits<double>::infinity(), v) : v;
    default: return v;
  }
}

inline double verifiable_input(int rank, int64_t index, ReduceOp op, DType dtype) {
  switch (op) {
    case ReduceOp::prod: return held_as(dtype, static_cast<double>((rank + index) % 2 + 1));
    case ReduceOp::min:
    case ReduceOp::max: return held_as(dtype, static_cast<double>((rank * 13 + index * 7) % 101 - 50));
    // Bit patterns that differ by rank and index, so a misplaced chunk shows; under 2^24, exact
    // as a double.
    case ReduceOp::band:
    case ReduceOp::bor:
    case ReduceOp::bxor:
      return held_as(dtype, static_cast<double>(((rank + 1) * 0x9E37 + index * 0x51) & 0xFFFFFF));
    default: return held_as(dtype, static_cast<double>((rank * 7 + index) % 31 - 10));
  }
}

inline double verifiable_result(int size, int64_t index, ReduceOp op, DType dtype) {
  double acc = verifiable_input(0, index, op, dtype);
  for (int r = 1; r < size; ++r) {
    const double v = verifiable_input(r, index, op, dtype);
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
  return held_as(dtype, op == ReduceOp::avg ? acc / size : acc);
}

}  // namespace ringdp::bench

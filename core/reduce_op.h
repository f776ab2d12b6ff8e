// ReduceOp: how a reduction combines values (sum, prod, min, max, avg, and on integers the bitwise
// band, bor, bxor: torch.distributed's BAND, BOR, BXOR). One of the shared words
// of core/ (with DType, Error, Device, the timeline and the settings), which every layer includes,
// in namespace ringdp. The words of comm/ alone (which collective, which algorithm) are in
// comm/types.h.
#pragma once

#include <cstdint>
#include <string_view>

namespace ringdp {

/// avg reduces as sum everywhere below the communicator, which divides once at the end.
enum class ReduceOp : uint8_t { sum, prod, min, max, avg, band, bor, bxor };

/// band, bor and bxor: defined on integer dtypes only (the collectives refuse them on others).
constexpr bool is_bitwise(ReduceOp op) {
  return op == ReduceOp::band || op == ReduceOp::bor || op == ReduceOp::bxor;
}

const char* reduce_op_name(ReduceOp op);
/// Parses sum, prod, min, max, avg, band, bor, bxor; anything else is a ringdp::Error naming it.
ReduceOp parse_reduce_op(std::string_view name);

}  // namespace ringdp

// ReduceOp: how a reduction combines values (sum, prod, min, max, avg). One of the shared words
// of core/ (with DType, Error, Device, the timeline and the settings), which every layer includes,
// in namespace ringdp. The words of comm/ alone (which collective, which algorithm) are in
// comm/types.h.
#pragma once

#include <cstdint>
#include <string_view>

namespace ringdp {

/// avg reduces as sum everywhere below the communicator, which divides once at the end.
enum class ReduceOp : uint8_t { sum, prod, min, max, avg };

const char* reduce_op_name(ReduceOp op);
/// Parses sum, prod, min, max, avg; anything else is a ringdp::Error naming it.
ReduceOp parse_reduce_op(std::string_view name);

}  // namespace ringdp

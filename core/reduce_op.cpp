// Implements core/reduce_op.h (the contract is documented there). Tested by tests/unit/test_kernels.cpp
// and tests/cli/bench.sh errors.
#include "core/reduce_op.h"

#include "core/error.h"

namespace ringdp {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::prod: return "prod";
    case ReduceOp::min: return "min";
    case ReduceOp::max: return "max";
    case ReduceOp::avg: return "avg";
    case ReduceOp::band: return "band";
    case ReduceOp::bor: return "bor";
    case ReduceOp::bxor: return "bxor";
  }
  return "unknown";
}

ReduceOp parse_reduce_op(std::string_view name) {
  if (name == "sum") return ReduceOp::sum;
  if (name == "prod") return ReduceOp::prod;
  if (name == "min") return ReduceOp::min;
  if (name == "max") return ReduceOp::max;
  if (name == "avg") return ReduceOp::avg;
  if (name == "band") return ReduceOp::band;
  if (name == "bor") return ReduceOp::bor;
  if (name == "bxor") return ReduceOp::bxor;
  RINGDP_FAIL("unknown reduce op '", name, "'; expected sum, prod, min, max, avg, band, bor or bxor");
}

}  // namespace ringdp

// Implements bindings/torch/reduce_op.h (the contract is documented there).
#include "bindings/torch/reduce_op.h"

#include "core/error.h"

namespace ringdp_torch {

ringdp::ReduceOp to_ringdp(const ::c10d::ReduceOp& op) {
  switch (static_cast<::c10d::ReduceOp::RedOpType>(op)) {
    case ::c10d::ReduceOp::SUM: return ringdp::ReduceOp::sum;
    case ::c10d::ReduceOp::PRODUCT: return ringdp::ReduceOp::prod;
    case ::c10d::ReduceOp::MIN: return ringdp::ReduceOp::min;
    case ::c10d::ReduceOp::MAX: return ringdp::ReduceOp::max;
    case ::c10d::ReduceOp::AVG: return ringdp::ReduceOp::avg;
    case ::c10d::ReduceOp::BAND: return ringdp::ReduceOp::band;
    case ::c10d::ReduceOp::BOR: return ringdp::ReduceOp::bor;
    case ::c10d::ReduceOp::BXOR: return ringdp::ReduceOp::bxor;
    case ::c10d::ReduceOp::PREMUL_SUM: RINGDP_FAIL("ReduceOp.PREMUL_SUM is not supported by ringdp");
    default: break;
  }
  RINGDP_FAIL("ReduceOp ", static_cast<int>(static_cast<::c10d::ReduceOp::RedOpType>(op)),
              " is not supported by ringdp");
}

}  // namespace ringdp_torch

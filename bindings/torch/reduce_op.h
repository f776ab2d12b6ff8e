// torch's ReduceOp as ringdp's. SUM, PRODUCT, MIN, MAX, AVG, BAND, BOR and BXOR map one to one
// (ringdp refuses the bitwise ones on floating dtypes); PREMUL_SUM is refused with a ringdp::Error
// naming it (docs/torch.md). Tested by
// tests/torch/test_collectives.py.
#pragma once

#include "bindings/torch/compat.h"
#include "core/reduce_op.h"

namespace ringdp_torch {

ringdp::ReduceOp to_ringdp(const ::c10d::ReduceOp& op);

}  // namespace ringdp_torch

// torch's ReduceOp as ringdp's. SUM, PRODUCT, MIN, MAX and AVG map one to one; BAND, BOR, BXOR and
// PREMUL_SUM are refused with a ringdp::Error naming them (docs/torch.md). Tested by
// tests/torch/test_collectives.py.
#pragma once

#include "bindings/torch/compat.h"
#include "core/reduce_op.h"

namespace ringdp_torch {

ringdp::ReduceOp to_ringdp(const ::c10d::ReduceOp& op);

}  // namespace ringdp_torch

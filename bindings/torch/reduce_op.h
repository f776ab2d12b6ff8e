// torch's ReduceOp as ringdp's. SUM, PRODUCT, MIN, MAX, AVG, BAND, BOR and BXOR map one to one
// (ringdp refuses the bitwise ones on floating dtypes). PREMUL_SUM (torch 2.x, as NCCL's: FSDP2 uses
// it for a custom divide factor) is a sum whose inputs are each multiplied first by a factor, a
// number or a one-element tensor: to_reduction gives the factor, and the collectives that take it
// (allreduce, allreduce_coalesced, the reduce_scatters) multiply their input before the sum, so
// every rank computes the same products and receives the same bits. Anything else is refused with
// a ringdp::Error naming it (docs/torch.md). Tested by tests/torch/test_collectives.py and
// test_torch2.py.
#pragma once

#include <optional>

#include "bindings/torch/compat.h"
#include "core/reduce_op.h"

namespace ringdp_torch {

/// `call` names the collective in the refusal of PREMUL_SUM.
ringdp::ReduceOp to_ringdp(const ::c10d::ReduceOp& op, const char* call = "this collective");

struct Reduction {
  ringdp::ReduceOp op = ringdp::ReduceOp::sum;
  std::optional<double> factor{};  ///< PREMUL_SUM's: each input is multiplied by it before the sum
};
Reduction to_reduction(const ::c10d::ReduceOp& op);

/// The input a collective reduces: `input` itself, or for PREMUL_SUM input × factor in input's dtype
/// (a new tensor: the caller's input is left as it was). Refuses a dtype that is not floating.
at::Tensor premultiplied(const at::Tensor& input, const Reduction& reduction, const char* what);
/// PREMUL_SUM's dtype rule alone, for a tensor multiplied in place (TensorView::premultiply).
void check_premultipliable(const at::Tensor& input, const char* what);

}  // namespace ringdp_torch

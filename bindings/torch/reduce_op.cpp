// Implements bindings/torch/reduce_op.h (the contract is documented there).
#include "bindings/torch/reduce_op.h"

#include <c10/util/Exception.h>

#include "core/error.h"

namespace ringdp_torch {

namespace {
using RedOpType = ::c10d::ReduceOp::RedOpType;

double premul_factor(const ::c10d::ReduceOp& op) {
  const auto* supplement = dynamic_cast<const ::c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  RINGDP_CHECK(supplement != nullptr,
               "ReduceOp.PREMUL_SUM without its factor (make it with "
               "torch.distributed._make_nccl_premul_sum(factor))");
#if TORCH_VERSION_MAJOR >= 2
  const at::Tensor& factor = supplement->tensor_factor;
#else
  const at::Tensor factor =
      supplement->tensor_factors.empty() ? at::Tensor() : supplement->tensor_factors.front();
#endif
  if (!factor.defined()) return supplement->double_factor;
  RINGDP_CHECK(factor.numel() == 1, "ReduceOp.PREMUL_SUM's factor has ", factor.numel(),
               " elements; expected one");
  return factor.item<double>();
}
}  // namespace

ringdp::ReduceOp to_ringdp(const ::c10d::ReduceOp& op, const char* call) {
  switch (static_cast<RedOpType>(op)) {
    case ::c10d::ReduceOp::SUM: return ringdp::ReduceOp::sum;
    case ::c10d::ReduceOp::PRODUCT: return ringdp::ReduceOp::prod;
    case ::c10d::ReduceOp::MIN: return ringdp::ReduceOp::min;
    case ::c10d::ReduceOp::MAX: return ringdp::ReduceOp::max;
    case ::c10d::ReduceOp::AVG: return ringdp::ReduceOp::avg;
    case ::c10d::ReduceOp::BAND: return ringdp::ReduceOp::band;
    case ::c10d::ReduceOp::BOR: return ringdp::ReduceOp::bor;
    case ::c10d::ReduceOp::BXOR: return ringdp::ReduceOp::bxor;
    case ::c10d::ReduceOp::PREMUL_SUM:
      RINGDP_FAIL("ReduceOp.PREMUL_SUM is not supported by ringdp's ", call,
                  "; all_reduce, all_reduce_coalesced, reduce_scatter and reduce_scatter_tensor take it");
    default: break;
  }
  RINGDP_FAIL("ReduceOp ", static_cast<int>(static_cast<RedOpType>(op)), " is not supported by ringdp");
}

Reduction to_reduction(const ::c10d::ReduceOp& op) {
  if (static_cast<RedOpType>(op) == ::c10d::ReduceOp::PREMUL_SUM)
    return Reduction{.op = ringdp::ReduceOp::sum, .factor = premul_factor(op)};
  return Reduction{.op = to_ringdp(op)};
}

void check_premultipliable(const at::Tensor& input, const char* what) {
  RINGDP_CHECK(at::isFloatingType(input.scalar_type()), "ReduceOp.PREMUL_SUM needs a floating dtype; ", what,
               " has ", c10::toString(input.scalar_type()));
}

at::Tensor premultiplied(const at::Tensor& input, const Reduction& reduction, const char* what) {
  if (!reduction.factor) return input;
  check_premultipliable(input, what);
  return input.mul(*reduction.factor);
}

}  // namespace ringdp_torch

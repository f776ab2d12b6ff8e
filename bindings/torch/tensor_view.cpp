// Implements bindings/torch/tensor_view.h (the contract is documented there).
#include "bindings/torch/tensor_view.h"

#include <c10/util/typeid.h>

#include "core/error.h"

namespace ringdp_torch {

ringdp::DType to_ringdp(at::ScalarType type, const char* what) {
  switch (type) {
    case at::kFloat: return ringdp::DType::float32;
    case at::kDouble: return ringdp::DType::float64;
    case at::kInt: return ringdp::DType::int32;
    case at::kLong: return ringdp::DType::int64;
    case at::kBFloat16: return ringdp::DType::bfloat16;
    case at::kHalf: return ringdp::DType::float16;
    case at::kChar: return ringdp::DType::int8;
    case at::kByte: return ringdp::DType::uint8;
    case at::kBool: return ringdp::DType::boolean;
    default:
      RINGDP_FAIL(what, " has dtype ", c10::toString(type),
                  ", which ringdp does not support (float32, float64, float16, bfloat16, int64, int32, int8, "
                  "uint8 and bool are)");
  }
}

TensorView::TensorView(const at::Tensor& tensor, const char* what) : original_(tensor) {
  RINGDP_CHECK(tensor.defined(), what, " is an undefined tensor");
#if RINGDP_TORCH_CUDA
  RINGDP_CHECK(tensor.device().is_cpu() || tensor.device().is_cuda(), what, " is on ", tensor.device().str(),
               "; the ringdp backend takes CPU and CUDA tensors (docs/torch.md)");
#else
  RINGDP_CHECK(
      tensor.device().is_cpu(), what, " is on ", tensor.device().str(),
      "; the ringdp backend takes CPU tensors (docs/torch.md): this one was built without CUDA tensors "
      "(a torch without CUDA, or a ringdp without CUDA and NCCL); give CUDA tensors to NCCL with "
      "init_process_group(\"cpu:ringdp,cuda:nccl\")");
#endif
  RINGDP_CHECK(!tensor.is_sparse(), what, " is sparse; the ringdp backend takes dense tensors");
  const ringdp::DType dtype = to_ringdp(tensor.scalar_type(), what);
  contiguous_ = tensor.is_contiguous() ? tensor : tensor.contiguous();
  // torch's shape, not a flat one: ringdp's collectives go by the element count, and a message
  // then names the shape the user passed (issue #47 item 8).
  // ringdp's tensors have at most 8 dims: a tensor of more is viewed flat.
  const auto sizes = contiguous_.sizes();
  const ringdp::Shape shape =
      sizes.size() <= 8 ? ringdp::Shape(sizes.begin(), sizes.end()) : ringdp::Shape{contiguous_.numel()};
  const ringdp::Device device =
      tensor.device().is_cuda() ? ringdp::Device::cuda(tensor.device().index()) : ringdp::Device::cpu();
  view_ = ringdp::Tensor::borrow(contiguous_.data_ptr(), shape, dtype, device);
}

void TensorView::write_back() {
  if (!contiguous_.is_same(original_)) original_.copy_(contiguous_);
}

}  // namespace ringdp_torch

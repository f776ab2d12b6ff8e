// An at::Tensor as the ringdp tensor a collective runs on. A contiguous tensor is borrowed: ringdp
// reads and writes its memory, nothing is copied (ringdp::Tensor::borrow), in device memory too
// where the backend carries CUDA tensors (RINGDP_TORCH_CUDA: the communicator routes them to NCCL).
// A non-contiguous one goes through a contiguous copy, written back afterwards (docs/torch.md).
// CUDA tensors in a backend built without them, and dtypes ringdp lacks, are refused, naming them.
// Tested by tests/torch/test_collectives.py and, on a GPU, tests/gpu/device_check.sh.
#pragma once

#include <ATen/ATen.h>

#include "core/dtype.h"
#include "tensor/tensor.h"

namespace ringdp_torch {

/// ringdp's dtype for torch's, or a ringdp::Error naming the dtype and `what` it was passed as.
ringdp::DType to_ringdp(at::ScalarType type, const char* what);

class TensorView {
 public:
  /// `what` names the argument in errors ("allreduce's tensor").
  TensorView(const at::Tensor& tensor, const char* what);
  ringdp::Tensor& ringdp() { return view_; }
  /// Multiplies what the collective will read by `factor` (PREMUL_SUM's, in place: the caller's
  /// tensor is overwritten by the result anyway); a floating dtype (reduce_op.h checks it).
  void premultiply(double factor) { contiguous_.mul_(factor); }
  /// Copies the result into the caller's tensor when it was not contiguous; else nothing.
  void write_back();

 private:
  at::Tensor original_, contiguous_;
  ringdp::Tensor view_;
};

}  // namespace ringdp_torch

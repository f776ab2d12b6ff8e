// Implements comm/ddp/default_hooks.h (the contract is documented there). Tested by
// tests/mpi/test_comm_hooks.cpp.
#include "comm/ddp/default_hooks.h"

#include "core/error.h"
#include "core/timeline.h"
#include "tensor/ops.h"

namespace ringdp::ddp {

comm::Work allreduce_hook(comm::Communicator& comm, GradBucket& bucket) {
  bucket.bytes_communicated = static_cast<int64_t>(bucket.buffer.nbytes());
  return comm.all_reduce(bucket.buffer, ReduceOp::avg, {.algorithm = bucket.algorithm, .async = true});
}

comm::Work compress_hook(comm::Communicator& comm, GradBucket& bucket, DType dtype) {
  RINGDP_CHECK(dtype == DType::float16 || dtype == DType::bfloat16,
               "compress_hook: compresses to float16 or bfloat16, not ", dtype_name(dtype));
  // Divided after the cast, in the compressed dtype, as PyTorch does: the sum of N values each
  // at most max/N cannot overflow float16 where the sum of the undivided ones could.
  // The hook's own work gets spans of its own on the timeline, apart from the collective it
  // issues, so a trace shows what the compression costs beside what it saves.
  const bool half = dtype == DType::float16;
  const int index = bucket.index;
  Tensor compressed;
  {
    timeline::Scope span("comm_hook", half ? "fp16: cast, divide" : "bf16: cast, divide");
    if (span.active()) span.set_args(detail::concat("\"bucket\": ", index));
    compressed = bucket.buffer.to(dtype);
    ops::scale_(compressed, 1.0 / comm.size());
  }
  bucket.bytes_communicated = static_cast<int64_t>(compressed.nbytes());
  comm::Work reduced =
      comm.all_reduce(compressed, ReduceOp::sum, {.algorithm = bucket.algorithm, .async = true});
  Tensor buffer = bucket.buffer;  // a handle: the GradBucket is gone when the Work finishes
  // The cast back is local work: it may run whenever the all-reduce is seen complete.
  return comm::Work::then(
      reduced,
      [buffer, compressed, half, index]() mutable {
        timeline::Scope span("comm_hook", half ? "fp16: cast back" : "bf16: cast back");
        if (span.active()) span.set_args(detail::concat("\"bucket\": ", index));
        buffer.copy_from(compressed);
      },
      [] { return true; });
}

}  // namespace ringdp::ddp

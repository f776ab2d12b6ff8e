// Implements comm/ddp/default_hooks.h (the contract is documented there). Tested by
// tests/mpi/test_comm_hooks.cpp.
#include "comm/ddp/default_hooks.h"

#include "core/error.h"
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
  Tensor compressed = bucket.buffer.to(dtype);
  ops::scale_(compressed, 1.0 / comm.size());
  bucket.bytes_communicated = static_cast<int64_t>(compressed.nbytes());
  comm::Work reduced =
      comm.all_reduce(compressed, ReduceOp::sum, {.algorithm = bucket.algorithm, .async = true});
  Tensor buffer = bucket.buffer;  // a handle: the GradBucket is gone when the Work finishes
  // The cast back is local work: it may run whenever the all-reduce is seen complete.
  return comm::Work::then(
      reduced, [buffer, compressed]() mutable { buffer.copy_from(compressed); }, [] { return true; });
}

}  // namespace ringdp::ddp

// The simple DDP communication hooks (PyTorch's default_hooks.py, 1.13): the plain average and
// the fp16/bf16 compressions. Their state is the communicator (PyTorch's is the process group):
//   ddp.register_comm_hook(communicator, ddp::fp16_compress_hook);
// Tested by tests/mpi/test_comm_hooks.cpp, and against PyTorch by tests/cli/train.sh (comm_hook_torch).
#pragma once

#include "comm/communicator.h"
#include "comm/ddp/grad_bucket.h"

namespace ringdp::ddp {

/// The average by one all-reduce (ReduceOp::avg), exactly what DDP does with no hook: the result
/// is bit for bit the unhooked one. PyTorch's allreduce_hook divides by the world size first and
/// then sums, which rounds differently in the last bit.
comm::Work allreduce_hook(comm::Communicator& comm, GradBucket& bucket);

/// Casts the bucket to `dtype` (float16 or bfloat16), divides by the world size in that dtype,
/// all-reduces (sum) the compressed copy and casts the result back into the bucket: half the bytes
/// of a float32 all-reduce. The same order of operations as PyTorch's fp16_compress_hook /
/// bf16_compress_hook: cast, divide, sum, cast back.
comm::Work compress_hook(comm::Communicator& comm, GradBucket& bucket, DType dtype);

inline comm::Work fp16_compress_hook(comm::Communicator& comm, GradBucket& bucket) {
  return compress_hook(comm, bucket, DType::float16);
}
inline comm::Work bf16_compress_hook(comm::Communicator& comm, GradBucket& bucket) {
  return compress_hook(comm, bucket, DType::bfloat16);
}

}  // namespace ringdp::ddp

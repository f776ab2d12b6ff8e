// The collectives' local reduction: dst[i] = dst[i] op src[i] for i < count.
// avg reduces as sum and is divided once: the ring and Rabenseifner divide each part as its sum
// completes (CollectiveContext::scale), the other algorithms at the end (ops::scale_).
//
// bfloat16 and float16 are computed in float32 and rounded to nearest even.
// bool: sum and max are any (logical or), prod and min all (logical and), band/bor/bxor act on
// the truth values, avg is an error; every result is 0 or 1.
// Integer sum and prod wrap around (two's complement) instead of overflowing into UB.
// Every op is commutative bit for bit (min/max order ±0 by sign and give one canonical NaN),
// so an algorithm may combine a op b or b op a and all ranks still agree exactly.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/dtype.h"
#include "core/reduce_op.h"

namespace ringdp {
namespace kernels {

void reduce_into_cpu(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op,
                     Stream stream = nullptr);
void reduce_into_cuda(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op,
                      Stream stream = nullptr);

}  // namespace kernels
}  // namespace ringdp

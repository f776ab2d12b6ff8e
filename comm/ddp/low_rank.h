// The small dense linear algebra PowerSGD needs (comm/ddp/powersgd_hook.h), on host matrices of
// float32 or float64: row-major, contiguous, 2-D. Plain loops with float64 accumulation: the
// matrices are one layer's gradient (rows x cols) and its rank-r factors (rows x r, cols x r),
// r of 1 to 4 in practice, so the products are matrix-times-a-few-vectors. Tested by
// tests/unit/test_low_rank.cpp against a reference product, and by the PowerSGD tests
// in tests/mpi/test_comm_hooks.cpp.
#pragma once

#include "tensor/tensor.h"

namespace ringdp::ddp {

/// out = op(a) · op(b), op(x) = xᵀ when its flag is set; out is written, not accumulated into.
/// All three share one dtype (float32 or float64) and live on the host; shapes must agree.
void matmul_into(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& out);

/// Gram-Schmidt on the columns of `matrix` (rows x cols, cols <= rows), in place: each column is
/// normalised in turn, then removed from the columns after it. A column of zeros stays zero when
/// epsilon is 0 (where PyTorch's would be NaN, then zeroed by its caller); epsilon > 0 is added to
/// every norm, as PyTorch's orthogonalization_epsilon.
void orthogonalize_columns(Tensor& matrix, double epsilon = 0.0);

}  // namespace ringdp::ddp

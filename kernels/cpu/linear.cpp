// CPU Linear: OpenBLAS GEMM for the products, plain loops for bias and db.
// Tested against linear_reference.cpp in tests/unit/test_kernels.cpp.
#include <cblas.h>

#include <algorithm>

#include "kernels/linear.h"

namespace ringdp::kernels {
namespace {

// C[M,N] = op(A) · op(B) in row-major, with the degenerate sizes BLAS rejects handled here:
// an empty output needs no work, and an empty inner dimension K gives zeros.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* Bm,
          int64_t ldb, T* Cm, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i) std::fill(Cm + i * ldc, Cm + i * ldc + N, T(0));
    return;
  }
  const auto ta = trans_a ? CblasTrans : CblasNoTrans;
  const auto tb = trans_b ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, A, lda, Bm, ldb, 0.0f, Cm, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, A, lda, Bm, ldb, 0.0, Cm, ldc);
  }
}

}  // namespace

void linear_forward_cpu(const void* x, const void* W, const void* b, void* y, int64_t B, int64_t C,
                        int64_t OC, DType dtype, Stream) {
  dispatch_float(dtype, "linear_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* out = static_cast<T*>(y);
    gemm<T>(false, true, B, OC, C, static_cast<const T*>(x), C, static_cast<const T*>(W), C, out, OC);
    if (b) {
      const auto* bias = static_cast<const T*>(b);
      for (int64_t i = 0; i < B; ++i)
        for (int64_t o = 0; o < OC; ++o) out[i * OC + o] += bias[o];
    }
  });
}

void linear_backward_cpu(const void* dy, const void* x, const void* W, void* dx, void* dW, void* db,
                         int64_t B, int64_t C, int64_t OC, DType dtype, Stream) {
  dispatch_float(dtype, "linear_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto* dout = static_cast<const T*>(dy);
    if (dx) {
      gemm<T>(false, false, B, C, OC, dout, OC, static_cast<const T*>(W), C, static_cast<T*>(dx), C);
    }
    if (dW) {
      gemm<T>(true, false, OC, C, B, dout, OC, static_cast<const T*>(x), C, static_cast<T*>(dW), C);
    }
    if (db) {
      auto* dbias = static_cast<T*>(db);
      std::fill(dbias, dbias + OC, T(0));
      for (int64_t i = 0; i < B; ++i)
        for (int64_t o = 0; o < OC; ++o) dbias[o] += dout[i * OC + o];
    }
  });
}

}  // namespace ringdp::kernels

// Implements comm/ddp/low_rank.h (the contract is documented there). Tested by
// tests/unit/test_low_rank.cpp.
#include "comm/ddp/low_rank.h"

#include <cmath>
#include <vector>

#include "core/error.h"

namespace ringdp::ddp {

namespace {
void check_matrix(const Tensor& t, const char* what) {
  RINGDP_CHECK(t.dim() == 2, "low_rank: ", what, " must be 2-D, has shape ", shape_str(t.shape()));
  RINGDP_CHECK(t.device().is_cpu(), "low_rank: ", what, " must be on the host");
  RINGDP_CHECK(t.dtype() == DType::float32 || t.dtype() == DType::float64, "low_rank: ", what,
               " must be float32 or float64, is ", dtype_name(t.dtype()));
}

// op(b) as a dense k x m float64 copy: PowerSGD's b is a factor (k x r or m x r, r small), so
// the copy is small, and every product below then reads it contiguously.
template <typename T>
std::vector<double> dense_op(const T* y, int64_t rows, int64_t cols, bool t) {
  std::vector<double> dense(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const double v = y[i * cols + j];
      if (t)
        dense[static_cast<size_t>(j * rows + i)] = v;
      else
        dense[static_cast<size_t>(i * cols + j)] = v;
    }
  return dense;
}

// The loops run along a's rows in memory order whether or not a is transposed: a is the large
// operand (one layer's gradient, megabytes), and walking its columns (Mᵀ·P) went a page per
// element and made PowerSGD's products several times slower than its all-reduces.
template <typename T>
void matmul_typed(const Tensor& a, bool ta, const Tensor& b, bool tb, Tensor& out) {
  const int64_t n = out.size(0), m = out.size(1), a_cols = a.size(1);
  const T* x = a.data<T>();
  const std::vector<double> y = dense_op(b.data<T>(), b.size(0), b.size(1), tb);  // k x m
  std::vector<double> acc(static_cast<size_t>(n * m), 0.0);
  for (int64_t r = 0; r < a.size(0); ++r) {
    const T* row = x + r * a_cols;
    for (int64_t c = 0; c < a_cols; ++c) {
      // Element (r, c) of a is op(a)'s (i, p): (r, c) as it stands, (c, r) transposed.
      const int64_t i = ta ? c : r, p = ta ? r : c;
      const double left = row[c];
      double* out_row = acc.data() + i * m;
      const double* right = y.data() + p * m;
      for (int64_t j = 0; j < m; ++j) out_row[j] += left * right[j];
    }
  }
  T* z = out.data<T>();
  for (int64_t e = 0; e < n * m; ++e) z[e] = static_cast<T>(acc[static_cast<size_t>(e)]);
}

template <typename T>
void orthogonalize_typed(Tensor& matrix, double epsilon) {
  const int64_t rows = matrix.size(0), cols = matrix.size(1);
  T* v = matrix.data<T>();
  for (int64_t c = 0; c < cols; ++c) {
    double norm = 0;
    for (int64_t r = 0; r < rows; ++r) norm += double(v[r * cols + c]) * v[r * cols + c];
    norm = std::sqrt(norm) + epsilon;
    const double inverse = norm > 0 ? 1.0 / norm : 0.0;
    for (int64_t r = 0; r < rows; ++r) v[r * cols + c] = static_cast<T>(v[r * cols + c] * inverse);
    for (int64_t later = c + 1; later < cols; ++later) {
      double dot = 0;
      for (int64_t r = 0; r < rows; ++r) dot += double(v[r * cols + c]) * v[r * cols + later];
      for (int64_t r = 0; r < rows; ++r) v[r * cols + later] -= static_cast<T>(dot * v[r * cols + c]);
    }
  }
}
}  // namespace

void matmul_into(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& out) {
  check_matrix(a, "a");
  check_matrix(b, "b");
  check_matrix(out, "out");
  const int64_t n = transpose_a ? a.size(1) : a.size(0), ka = transpose_a ? a.size(0) : a.size(1);
  const int64_t kb = transpose_b ? b.size(1) : b.size(0), m = transpose_b ? b.size(0) : b.size(1);
  RINGDP_CHECK(ka == kb && out.size(0) == n && out.size(1) == m, "low_rank: matmul of ", shape_str(a.shape()),
               transpose_a ? "ᵀ" : "", " and ", shape_str(b.shape()), transpose_b ? "ᵀ" : "", " into ",
               shape_str(out.shape()));
  RINGDP_CHECK(a.dtype() == b.dtype() && a.dtype() == out.dtype(), "low_rank: matmul of mixed dtypes");
  if (a.dtype() == DType::float32)
    matmul_typed<float>(a, transpose_a, b, transpose_b, out);
  else
    matmul_typed<double>(a, transpose_a, b, transpose_b, out);
}

void orthogonalize_columns(Tensor& matrix, double epsilon) {
  check_matrix(matrix, "matrix");
  RINGDP_CHECK(matrix.size(1) <= matrix.size(0), "low_rank: orthogonalize ", shape_str(matrix.shape()),
               ": more columns than rows");
  if (matrix.dtype() == DType::float32)
    orthogonalize_typed<float>(matrix, epsilon);
  else
    orthogonalize_typed<double>(matrix, epsilon);
}

}  // namespace ringdp::ddp

// comm/ddp/low_rank.h's product against the textbook triple loop, for every transpose pair, both
// dtypes and shapes with no dimension equal (so a swapped index cannot pass by symmetry).
#include <catch2/catch.hpp>

#include <cmath>

#include "comm/ddp/low_rank.h"
#include "tensor/tensor.h"

using namespace ringdp;

namespace {
// Element (i, j) of op(x), x row-major rows x cols.
double at(const Tensor& x, bool t, int64_t i, int64_t j) {
  return t ? x.item(j * x.size(1) + i) : x.item(i * x.size(1) + j);
}
}  // namespace

TEST_CASE("matmul_into equals the triple loop for every transpose pair and dtype", "[low_rank]") {
  const int64_t n = 7, k = 5, m = 3;
  for (DType dtype : {DType::float32, DType::float64}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const Tensor a = randn(ta ? Shape{k, n} : Shape{n, k}, 11).to(dtype);
        const Tensor b = randn(tb ? Shape{m, k} : Shape{k, m}, 12).to(dtype);
        Tensor out = full({n, m}, 99.0, dtype);  // written, not accumulated into
        ddp::matmul_into(a, ta, b, tb, out);
        double worst = 0;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < m; ++j) {
            double expected = 0;
            for (int64_t p = 0; p < k; ++p) expected += at(a, ta, i, p) * at(b, tb, p, j);
            worst = std::max(worst, std::abs(out.item(i * m + j) - expected));
          }
        INFO(dtype_name(dtype) << (ta ? " aT" : " a") << (tb ? " bT" : " b"));
        CHECK(worst < (dtype == DType::float32 ? 1e-5 : 1e-12));
      }
    }
  }
}

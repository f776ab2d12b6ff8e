// Helpers for the mpi suite: the shared world communicator, sums over ranks, and inputs whose
// exact collective results every rank can compute on its own.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "comm/communicator.h"
#include "tensor/tensor.h"

namespace ringdp::testing {

comm::Communicator& world();
std::shared_ptr<comm::Communicator> world_ptr();
/// Sum over all ranks through MPI_Allreduce directly: independent of the code under test.
int64_t global_sum(int64_t value);

/// Where the suite's tensors live: RINGDP_TEST_DEVICE=cuda runs the same checks on GPU tensors,
/// each rank on the GPU its communicator uses (tests/gpu/device_check.sh does, with
/// RINGDP_BACKEND=mpi or nccl); cpu by default.
inline Device test_device() {
  const char* d = std::getenv("RINGDP_TEST_DEVICE");
  if (!d || !*d) return Device::cpu();
  const Device requested = Device::parse(d);
  return requested.is_cuda() ? world().device() : requested;
}

/// Input of `rank` at `index` for op: small integers, exact in every dtype (bfloat16 too),
/// and different per rank and per index so a misplaced chunk changes the result.
/// apps/bench/verifiable.h computes the same kind of inputs for ringdp-bench; the two are kept
/// apart on purpose (prod differs too: 1..3 here, powers of two there), so that the suite's
/// expected results never come from the code shipped with what it checks.
inline double input_value(int rank, int64_t index, ReduceOp op) {
  switch (op) {
    case ReduceOp::prod: return static_cast<double>((rank + index) % 3 + 1);
    case ReduceOp::min:
    case ReduceOp::max: return static_cast<double>((rank * 13 + index * 7) % 101 - 50);
    // Bit patterns that differ per rank and index (negative ones too: two's complement).
    case ReduceOp::band:
    case ReduceOp::bor:
    case ReduceOp::bxor: return static_cast<double>(((rank * 37 + index * 11) % 251) - 100);
    default: return static_cast<double>((rank * 7 + index) % 31 - 10);
  }
}

/// Fills t with input_value(rank, offset + i, op) for every i.
inline void fill_input(Tensor& t, int rank, ReduceOp op, int64_t offset = 0) {
  Tensor host(t.shape(), DType::float64);
  auto* values = host.data<double>();
  for (int64_t i = 0; i < host.numel(); ++i) values[i] = input_value(rank, offset + i, op);
  t.copy_from(host);
}

/// The reduction over ranks 0..size-1 of input_value(·, index, op), in double.
inline double expected_value(int size, int64_t index, ReduceOp op) {
  double acc = input_value(0, index, op);
  for (int r = 1; r < size; ++r) {
    const double v = input_value(r, index, op);
    switch (op) {
      case ReduceOp::prod: acc *= v; break;
      case ReduceOp::min: acc = std::min(acc, v); break;
      case ReduceOp::max: acc = std::max(acc, v); break;
      case ReduceOp::band:
        acc = static_cast<double>(static_cast<int64_t>(acc) & static_cast<int64_t>(v));
        break;
      case ReduceOp::bor:
        acc = static_cast<double>(static_cast<int64_t>(acc) | static_cast<int64_t>(v));
        break;
      case ReduceOp::bxor:
        acc = static_cast<double>(static_cast<int64_t>(acc) ^ static_cast<int64_t>(v));
        break;
      default: acc += v; break;
    }
  }
  return op == ReduceOp::avg ? acc / size : acc;
}

/// Elements of got (at offset..offset+n of the logical result) that differ from expected;
/// avg is compared with a tolerance for the dtype, everything else exactly. Prints the first.
inline int64_t count_wrong(const Tensor& got, int size, ReduceOp op, int64_t offset = 0) {
  const std::vector<double> values = got.to_vector();
  const double rtol = op != ReduceOp::avg              ? 0.0
                      : got.dtype() == DType::bfloat16 ? 1.0 / 64
                      : got.dtype() == DType::float32  ? 1e-6
                                                       : 1e-14;
  int64_t wrong = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const double want = expected_value(size, offset + static_cast<int64_t>(i), op);
    if (std::fabs(values[i] - want) > rtol * std::fabs(want)) {
      if (wrong < 3)
        UNSCOPED_INFO("element " << offset + static_cast<int64_t>(i) << ": got " << values[i] << ", want "
                                 << want);
      ++wrong;
    }
  }
  return wrong;
}

}  // namespace ringdp::testing

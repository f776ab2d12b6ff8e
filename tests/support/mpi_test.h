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

/// Every dtype and every reduce op: what a collective's test runs through.
inline constexpr DType kAllDtypes[] = {DType::float32, DType::float64,  DType::int32,
                                       DType::int64,   DType::bfloat16, DType::float16,
                                       DType::int8,    DType::uint8,    DType::boolean};
inline constexpr ReduceOp kAllOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max,
                                       ReduceOp::avg, ReduceOp::band, ReduceOp::bor, ReduceOp::bxor};

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

/// v as a dtype holds it: integers wrap modulo 2^bits (two's complement), bool is v != 0, the
/// 16-bit floats round (the inputs below are exact in them). The suite's own arithmetic, written
/// apart from the kernels it checks.
inline double in_dtype(DType dtype, double v) {
  const auto wrapped = [v](int bits) {
    const uint64_t word = static_cast<uint64_t>(static_cast<int64_t>(v)) & ((uint64_t{1} << bits) - 1);
    return word >> (bits - 1) ? static_cast<double>(static_cast<int64_t>(word) - (int64_t{1} << bits))
                              : static_cast<double>(word);
  };
  switch (dtype) {
    case DType::int8: return wrapped(8);
    case DType::uint8: return static_cast<double>(static_cast<uint64_t>(static_cast<int64_t>(v)) & 0xff);
    case DType::int32: return wrapped(32);
    case DType::boolean: return v != 0 ? 1.0 : 0.0;
    default: return v;
  }
}

/// Input of `rank` at `index` for op, as dtype holds it: small integers, exact in every dtype
/// (bfloat16 and float16 too), and different per rank and per index so a misplaced chunk
/// changes the result.
/// apps/bench/verifiable.h computes the same kind of inputs for ringdp-bench; the two are kept
/// apart on purpose (prod differs too: 1..3 here, powers of two there), so that the suite's
/// expected results never come from the code shipped with what it checks.
inline double input_value(int rank, int64_t index, ReduceOp op, DType dtype = DType::float64) {
  double v = 0;
  switch (op) {
    case ReduceOp::prod: v = static_cast<double>((rank + index) % 3 + 1); break;
    case ReduceOp::min:
    case ReduceOp::max: v = static_cast<double>((rank * 13 + index * 7) % 101 - 50); break;
    // Bit patterns that differ per rank and index (negative ones too: two's complement).
    case ReduceOp::band:
    case ReduceOp::bor:
    case ReduceOp::bxor: v = static_cast<double>(((rank * 37 + index * 11) % 251) - 100); break;
    default: v = static_cast<double>((rank * 7 + index) % 31 - 10); break;
  }
  // bool takes the parity: zeros and ones on every op, so "any" and "all" give different answers
  // (the values above are mostly nonzero, and prod's never zero).
  if (dtype == DType::boolean) v = static_cast<double>(static_cast<int64_t>(v) & 1);
  return in_dtype(dtype, v);
}

/// Fills t with input_value(rank, offset + i, op, t's dtype) for every i.
inline void fill_input(Tensor& t, int rank, ReduceOp op, int64_t offset = 0) {
  Tensor host(t.shape(), DType::float64);
  auto* values = host.data<double>();
  for (int64_t i = 0; i < host.numel(); ++i) values[i] = input_value(rank, offset + i, op, t.dtype());
  t.copy_from(host);
}

/// The reduction over ranks 0..size-1 of input_value(·, index, op, dtype), exact in double (or
/// int64 for the bitwise ops) and then held as dtype holds it: wrapping at the end is the same
/// as wrapping each step for sum and prod (arithmetic modulo 2^bits), and for bool, whose inputs
/// are 0 or 1, the "any" of sum is the sum being nonzero.
inline double expected_value(int size, int64_t index, ReduceOp op, DType dtype = DType::float64) {
  double acc = input_value(0, index, op, dtype);
  for (int r = 1; r < size; ++r) {
    const double v = input_value(r, index, op, dtype);
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
  return in_dtype(dtype, op == ReduceOp::avg ? acc / size : acc);
}

/// Elements of got (at offset..offset+n of the logical result) that differ from expected;
/// avg is compared with a tolerance for the dtype, everything else exactly. Prints the first.
inline int64_t count_wrong(const Tensor& got, int size, ReduceOp op, int64_t offset = 0) {
  const std::vector<double> values = got.to_vector();
  const double rtol = op != ReduceOp::avg              ? 0.0
                      : got.dtype() == DType::bfloat16 ? 1.0 / 64
                      : got.dtype() == DType::float16  ? 1.0 / 512
                      : got.dtype() == DType::float32  ? 1e-6
                                                       : 1e-14;
  int64_t wrong = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const double want = expected_value(size, offset + static_cast<int64_t>(i), op, got.dtype());
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

// Implements comm/collective_checks.h (the contract is documented there).
#include "comm/collective_checks.h"

#include <cstddef>

#include "core/error.h"

namespace ringdp::comm {

void check_root(int root, int size, const char* what) {
  RINGDP_CHECK(root >= 0 && root < size, what, ": root ", root, " out of range for ", size,
               " ranks (expected 0..", size - 1, ")");
}

void check_pair(const Tensor& input, const Tensor& output, const char* what) {
  RINGDP_CHECK(input.defined() && output.defined(), what, ": undefined tensor");
  RINGDP_CHECK(input.dtype() == output.dtype(), what, ": input dtype ", dtype_name(input.dtype()),
               " differs from output dtype ", dtype_name(output.dtype()));
  RINGDP_CHECK(input.device() == output.device(), what, ": input on ", input.device().str(), ", output on ",
               output.device().str(), "; both must be on one device");
}

namespace {

[[noreturn, gnu::cold, gnu::noinline]] void fail_overlap(const char* what, size_t in_bytes,
                                                         std::ptrdiff_t out_at, size_t out_bytes) {
  RINGDP_FAIL(what, ": the output overlaps the input without being it (input bytes [0, ", in_bytes,
              "), output bytes [", out_at, ", ", out_at + static_cast<std::ptrdiff_t>(out_bytes),
              ") of the same memory); pass one tensor for in place, or two that do not overlap");
}

}  // namespace

void check_overlap(const Tensor& input, const Tensor& output, const char* what, const Tensor& larger,
                   const Tensor& chunk, size_t in_place_offset) {
  const auto* in = static_cast<const char*>(input.data_ptr());
  const auto* out = static_cast<const char*>(output.data_ptr());
  if (input.nbytes() == 0 || output.nbytes() == 0) return;
  if (in + input.nbytes() <= out || out + output.nbytes() <= in) return;  // disjoint
  const auto* base = static_cast<const char*>(larger.data_ptr());
  if (static_cast<const char*>(chunk.data_ptr()) == base + in_place_offset) return;  // in place
  fail_overlap(what, input.nbytes(), out - in, output.nbytes());
}

int64_t check_counts(std::span<const int64_t> counts, int size, const char* what, const char* name) {
  RINGDP_CHECK(static_cast<int64_t>(counts.size()) == size, what, ": ", name, " has ", counts.size(),
               " entries; expected one per rank, ", size);
  int64_t sum = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    RINGDP_CHECK(counts[i] >= 0, what, ": ", name, "[", i, "] is ", counts[i], "; counts cannot be negative");
    sum += counts[i];
  }
  return sum;
}

}  // namespace ringdp::comm

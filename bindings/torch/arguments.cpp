// Implements bindings/torch/arguments.h.
#include "bindings/torch/arguments.h"

#include "core/error.h"

namespace ringdp_torch {

const at::Tensor& only(const std::vector<at::Tensor>& tensors, const char* name) {
  RINGDP_CHECK(tensors.size() == 1, name, " got ", tensors.size(),
               " tensors; the ringdp backend takes one per call (one device per process)");
  return tensors[0];
}

void check_like(const at::Tensor& t, const at::Tensor& like, int64_t numel, const char* what) {
  RINGDP_CHECK(t.scalar_type() == like.scalar_type(), what, " has dtype ", c10::toString(t.scalar_type()),
               " but the input has ", c10::toString(like.scalar_type()));
  RINGDP_CHECK(t.numel() == numel, what, " has ", t.numel(), " elements; expected ", numel);
}

void unpack(const at::Tensor& flat, const std::vector<at::Tensor>& targets) {
  int64_t at = 0;
  for (const at::Tensor& t : targets) {
    t.copy_(flat.narrow(0, at, t.numel()).view(t.sizes()));
    at += t.numel();
  }
}

void check_coalesced(const std::vector<at::Tensor>& whole, const std::vector<at::Tensor>& part, int size,
                     const char* name) {
  RINGDP_CHECK(!part.empty() && whole.size() == part.size(), name,
               " needs as many outputs as inputs, at least one; got ", whole.size(), " and ", part.size());
  for (size_t i = 0; i < part.size(); ++i) {
    check_like(whole[i], part[i], size * part[i].numel(), name);
    RINGDP_CHECK(part[i].scalar_type() == part[0].scalar_type(), name, "'s tensors differ in dtype (",
                 c10::toString(part[i].scalar_type()), " and ", c10::toString(part[0].scalar_type()), ")");
  }
}

std::vector<int64_t> split_counts(const std::vector<int64_t>& splits, const at::Tensor& t, int size,
                                  const char* what) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const int64_t row = rows == 0 ? 0 : t.numel() / rows;
  if (splits.empty()) {
    RINGDP_CHECK(rows % size == 0, what, " has ", rows, " rows, which ", size,
                 " ranks cannot share equally; pass split sizes");
    return std::vector<int64_t>(static_cast<size_t>(size), rows / size * row);
  }
  RINGDP_CHECK(static_cast<int>(splits.size()) == size, what, " split sizes list ", splits.size(),
               " entries; expected ", size, " (one per rank)");
  int64_t total = 0;
  std::vector<int64_t> counts;
  for (const int64_t s : splits) {
    RINGDP_CHECK(s >= 0, what, " split size ", s, " is negative");
    total += s;
    counts.push_back(s * row);
  }
  RINGDP_CHECK(total == rows, what, " split sizes sum to ", total, " rows but the tensor has ", rows);
  return counts;
}

}  // namespace ringdp_torch

// The checks the front door (comm/collectives.cpp, comm/block_collectives.cpp) runs on a call's
// arguments before any message moves, so that bad input is an Error on every rank, not a hang or
// a write past a buffer. Each names the collective (`what`) and the values at fault. Tested by
// tests/mpi/test_comm_errors.cpp and tests/mpi/test_collectives.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tensor/tensor.h"

namespace ringdp::comm {

void check_root(int root, int size, const char* what);
/// Both defined, one dtype, one device.
void check_pair(const Tensor& input, const Tensor& output, const char* what);
/// Input and output may be one buffer (in place: the same bytes, or `chunk` at `in_place_offset`
/// bytes into `larger`, as for all_gather's and reduce_scatter's own chunk) or two that do not
/// overlap. Anything in between is refused: the algorithms read one while writing the other
/// through restrict pointers, and MPI forbids overlapping send and receive buffers.
void check_overlap(const Tensor& input, const Tensor& output, const char* what, const Tensor& larger,
                   const Tensor& chunk, size_t in_place_offset);
/// One count per rank, none negative: `name`[i] is named when it is not. Returns their sum.
int64_t check_counts(std::span<const int64_t> counts, int size, const char* what, const char* name);

}  // namespace ringdp::comm

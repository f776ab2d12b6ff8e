// One row of ringdp-bench's table: a collective at one size, dtype, op and algorithm, timed
// out of place and in place (nccl-tests' two column groups), each then checked on verifiable
// inputs. The times are combined across ranks as -a says; the wrong counts are summed.
#pragma once

#include <cstdint>
#include <string>

#include "apps/bench/collectives.h"

namespace ringdp::bench {

struct Row {
  std::string collective, algorithm;
  /// The algorithm that ran, as the communicator reported it on an untimed call (`auto` resolved);
  /// empty when the row made none (-w 0 -c 0), or the collective reported no step.
  std::string ran;
  std::string dtype, op;
  int root;
  int64_t bytes, count;
  double time_us[2], algbw[2], busbw[2];  ///< [0] out of place, [1] in place
  int64_t wrong[2];  ///< -1 when not checked
};

struct Timing {
  int iters, warmup, check;
  int average;  ///< across ranks: 0 rank 0, 1 mean, 2 min, 3 max
  bool blocking;  ///< wait for each collective (else issue all iterations, then wait)
  Device device;
  /// --buffers shared: the bytes every row's input and output are views of (allocate_shared);
  /// undefined for plain buffers, each row then allocating its own.
  Tensor shared_input, shared_output;
};

/// nccl-tests' type names: float, double, half, bfloat16, int64, int32, int8, uint8 (and bool).
const char* short_type(DType d);

/// Times and checks one row; `elements` is the table's size in elements of c.dtype.
Row time_row(const CollectiveSpec& spec, const Case& c, int64_t elements, const Timing& timing);

}  // namespace ringdp::bench

// The table of collectives ringdp-bench knows: how many elements each side holds for a given
// size, nccl-tests' bus-bandwidth factor, how to run it, and how to check its result.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.h"

namespace ringdp::bench {

struct Case {
  comm::Communicator& comm;
  DType dtype;
  ReduceOp op;
  int root;
  comm::Algorithm algorithm;
};

struct CollectiveSpec {
  const char* name;
  comm::CollectiveKind kind;
  bool has_op;  ///< prints redop; iterates over -o
  bool has_root;  ///< prints root
  /// nccl-tests' busbw = algbw · factor(N).
  double (*bus_factor)(int N);
  /// Elements in the input and output of one rank when the table's size is `elements` in all.
  int64_t (*input_count)(int64_t elements, int N);
  int64_t (*output_count)(int64_t elements, int N);
};

const std::vector<CollectiveSpec>& collective_table();
const CollectiveSpec& find_collective(const std::string& name);

/// Runs the collective once (in place when output aliases input).
comm::Work run_collective(const CollectiveSpec& spec, const Case& c, Tensor& input, Tensor& output,
                          bool async);
/// Fills this rank's input with verifiable values.
void fill_verifiable(const CollectiveSpec& spec, const Case& c, Tensor& input);
/// `value` combined over all ranks with `op` (ringdp's own algorithms, so the watchdog covers it).
double over_ranks(comm::Communicator& comm, double value, ReduceOp op);

/// Wrong elements of this rank's output (not summed over ranks).
int64_t count_wrong(const CollectiveSpec& spec, const Case& c, const Tensor& output);

}  // namespace ringdp::bench

// ringdp-bench's command line: nccl-tests' flags (-b -e -f -i -n -w -c -o -d -r -a -z) plus
// --algo, --backend, --device, --buffers, --csv, --json, --soak, --seed; and the sweep they describe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apps/bench/collectives.h"

namespace ringdp::bench {

struct Options {
  std::string collective = "all_reduce";
  std::string min_bytes = "32M", max_bytes = "32M", step_bytes = "1M";
  double factor = 1;
  int iters = 20, warmup = 5, check = 1, root = 0, average = 1, blocking = 1;
  std::string op = "sum", dtype = "float", algo = "auto", backend = "mpi", device = "cpu";
  std::string buffers = "plain";
  std::string csv_path, json_path;
  int64_t soak = 0;
  uint64_t seed = 1;
};

/// Parses argv into `o`. Returns the exit status when the program should stop here (--help: 0,
/// a flag CLI11 rejects: 2, printed by rank 0 only); nothing when it should run.
std::optional<int> parse_command_line(int argc, char** argv, Options& o);

/// What the options ask to sweep, parsed and checked: a bad value is a ringdp::Error naming it.
struct Sweep {
  std::vector<const CollectiveSpec*> specs;
  int64_t min_bytes = 0, max_bytes = 0, step_bytes = 0;
  double factor = 1;
  std::vector<DType> dtypes;
  std::vector<ReduceOp> ops;

  /// The size after `bytes`: times the factor (at least one more byte), or plus the step.
  int64_t next(int64_t bytes) const;
};
Sweep make_sweep(const Options& o);

/// The "-f" or "-i" text of the preamble: "2(factor)" or "1048576(bytes)".
std::string step_text(const Options& o, const Sweep& sweep);

}  // namespace ringdp::bench

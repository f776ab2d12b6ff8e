// What ringdp-bench prints and writes, from rows: nccl-tests' preamble, table header and row
// lines, its closing "Out of bounds values" and "Avg bus bandwidth", then ringdp's summary (an
// α–β fit per algorithm, fit.h; with --algo all each algorithm's busbw over native's), and the
// same rows as CSV or JSON for scripts/plot-bench. Rank 0 calls these.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/bench/timed_row.h"

namespace ringdp::bench {

/// Where the rows were measured: a column of every CSV and JSON row.
struct RunInfo {
  int ranks;
  std::string backend;
  std::string device;
};

void print_table_header(const char* collective, const char* algorithm);
void print_row(const Row& row);
/// Wrong elements over every row (the exit status depends on it), average busbw, the fits, and
/// with `ratios` each algorithm's busbw as a ratio of native's at the same size.
void print_summary(const std::vector<Row>& rows, int64_t total_wrong, bool ratios);
void write_csv(const std::string& path, const std::vector<Row>& rows, const RunInfo& run);
void write_json(const std::string& path, const std::vector<Row>& rows, const RunInfo& run);

}  // namespace ringdp::bench

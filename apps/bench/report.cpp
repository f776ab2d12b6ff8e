// Implements apps/bench/report.h (the contract is documented there). Tested by tests/cli/bench.sh (table).
#include "apps/bench/report.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <sstream>

#include "apps/bench/fit.h"
#include "core/atomic_file.h"
#include "core/error.h"

namespace ringdp::bench {

void print_table_header(const char* collective, const char* algorithm) {
  std::printf("# %s, algorithm %s\n", collective, algorithm);
  std::printf("#%13s %13s %9s %7s %5s   %9s %8s %8s %6s   %9s %8s %8s %6s\n", "size", "count", "type",
              "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::printf("#%13s %13s %9s %7s %5s   %9s %8s %8s %6s   %9s %8s %8s %6s\n", "(B)", "(elements)", "", "", "",
              "(us)", "(GB/s)", "(GB/s)", "out", "(us)", "(GB/s)", "(GB/s)", "in");
}

void print_row(const Row& row) {
  std::printf(" %13lld %13lld %9s %7s %5d   %9.2f %8.3f %8.3f %6lld   %9.2f %8.3f %8.3f %6lld\n",
              static_cast<long long>(row.bytes), static_cast<long long>(row.count), row.dtype.c_str(),
              row.op.c_str(), row.root, row.time_us[0], row.algbw[0], row.busbw[0],
              static_cast<long long>(row.wrong[0]), row.time_us[1], row.algbw[1], row.busbw[1],
              static_cast<long long>(row.wrong[1]));
  std::fflush(stdout);
}

void print_summary(const std::vector<Row>& rows, int64_t total_wrong, bool ratios) {
  double busbw_sum = 0;
  int busbw_n = 0;
  for (const Row& r : rows) {
    busbw_sum += r.busbw[0] + r.busbw[1];
    busbw_n += 2;
  }
  std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(total_wrong),
              total_wrong ? "FAILED" : "OK");
  std::printf("# Avg bus bandwidth    : %g\n#\n", busbw_n ? busbw_sum / busbw_n : 0.0);
  // Per algorithm: α–β fit on the out-of-place times of the largest group of rows.
  std::map<std::string, std::vector<Sample>> by_algo;
  for (const Row& r : rows)
    if (r.bytes > 0)
      by_algo[r.collective + " " + r.algorithm + " " + r.dtype + " " + r.op].push_back(
          {r.bytes, r.time_us[0] * 1e-6, r.busbw[0]});
  std::printf(
      "# Summary (out-of-place): time(bytes) = alpha + bytes / bandwidth, fitted to the sizes above by least "
      "squares on relative error\n");
  std::printf("# %-44s %10s %12s %6s %11s %14s\n", "collective algorithm type op", "alpha(us)", "bw(GB/s)",
              "fit", "peak busbw", "80% of peak at");
  for (const auto& [key, samples] : by_algo) {
    const AlphaBeta fit = fit_alpha_beta(samples);
    if (fit.fitted)
      std::printf("# %-44s %10.2f %12.3f %6.3f %11.3f %12lld B\n", key.c_str(), fit.alpha_us, fit.bandwidth,
                  fit.r_squared, fit.peak_busbw, static_cast<long long>(fit.bytes_at_80));
    else
      std::printf(
          "# %-44s %30s %11.3f %12lld B  (alpha and bw need two or more sizes, -b below -e; this run has "
          "%d)\n",
          key.c_str(), "no fit", fit.peak_busbw, static_cast<long long>(fit.bytes_at_80), fit.distinct_sizes);
  }
  if (!ratios) return;
  std::printf("#\n# busbw as a ratio of native (out-of-place), per size\n");
  std::map<std::string, double> native;
  for (const Row& r : rows)
    if (r.algorithm == "native") native[r.collective + r.dtype + r.op + std::to_string(r.bytes)] = r.busbw[0];
  for (const Row& r : rows) {
    if (r.algorithm == "native") continue;
    const double base = native[r.collective + r.dtype + r.op + std::to_string(r.bytes)];
    if (base > 0)
      std::printf("# %-15s %-19s %12lld B  %6.2fx\n", r.collective.c_str(), r.algorithm.c_str(),
                  static_cast<long long>(r.bytes), r.busbw[0] / base);
  }
}

void write_csv(const std::string& path, const std::vector<Row>& rows, const RunInfo& run) {
  std::ostringstream csv;
  csv << "collective,algorithm,ran,backend,device,ranks,dtype,op,root,bytes,count,time_us_out,algbw_out,"
         "busbw_"
         "out,wrong_out,"
         "time_us_in,algbw_in,busbw_in,wrong_in\n";
  for (const Row& r : rows)
    csv << r.collective << ',' << r.algorithm << ',' << r.ran << ',' << run.backend << ',' << run.device
        << ',' << run.ranks << ',' << r.dtype << ',' << r.op << ',' << r.root << ',' << r.bytes << ','
        << r.count << ',' << r.time_us[0] << ',' << r.algbw[0] << ',' << r.busbw[0] << ',' << r.wrong[0]
        << ',' << r.time_us[1] << ',' << r.algbw[1] << ',' << r.busbw[1] << ',' << r.wrong[1] << '\n';
  write_file_atomically(path, csv.str(), "--csv");
}

void write_json(const std::string& path, const std::vector<Row>& rows, const RunInfo& run) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Row& r : rows)
    out.push_back(
        {{"collective", r.collective},
         {"algorithm", r.algorithm},
         {"ran", r.ran},
         {"backend", run.backend},
         {"device", run.device},
         {"ranks", run.ranks},
         {"dtype", r.dtype},
         {"op", r.op},
         {"root", r.root},
         {"bytes", r.bytes},
         {"count", r.count},
         {"out_of_place",
          {{"time_us", r.time_us[0]}, {"algbw", r.algbw[0]}, {"busbw", r.busbw[0]}, {"wrong", r.wrong[0]}}},
         {"in_place",
          {{"time_us", r.time_us[1]}, {"algbw", r.algbw[1]}, {"busbw", r.busbw[1]}, {"wrong", r.wrong[1]}}}});
  write_file_atomically(path, out.dump(1) + "\n", "--json");
}

}  // namespace ringdp::bench

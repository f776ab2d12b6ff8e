// ringdp-bench: nccl-tests' command line and table for ringdp's collectives, plus what
// nccl-tests does not print: per-algorithm α–β fits, peak bus bandwidth, the size reaching 80%
// of it, and (with --algo all) each algorithm's bus bandwidth as a ratio of the native one.
//   mpirun -np 4 ringdp-bench all_reduce -b 8 -e 128M -f 2 --algo all --csv out.csv
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "apps/bench/collectives.h"
#include "apps/bench/fit.h"
#include "apps/bench/soak.h"
#include "config.h"
#include "comm/mpi_runtime.h"
#include "kernels/device_memory.h"
#include "tensor/ops.h"

using namespace ringdp;
using namespace ringdp::bench;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string collective = "all_reduce";
  std::string min_bytes = "32M", max_bytes = "32M", step_bytes = "1M";
  double factor = 1;
  int iters = 20, warmup = 5, check = 1, root = 0, average = 1, blocking = 1;
  std::string op = "sum", dtype = "float", algo = "auto", backend = "mpi", device = "cpu";
  std::string csv_path, json_path;
  int64_t soak = 0;
  uint64_t seed = 1;
};

int64_t parse_size(const std::string& text, const char* flag) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  RINGDP_CHECK(end != text.c_str() && value >= 0, flag, ": '", text, "' is not a size (a number with an optional K, M or G)");
  double scale = 1;
  const std::string suffix(end);
  if (suffix == "K" || suffix == "k") scale = 1024.0;
  else if (suffix == "M" || suffix == "m") scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g") scale = 1024.0 * 1024 * 1024;
  else RINGDP_CHECK(suffix.empty(), flag, ": '", text, "' has an unknown suffix '", suffix, "' (K, M or G)");
  return static_cast<int64_t>(value * scale);
}

const char* short_type(DType d) {
  switch (d) {
    case DType::float32: return "float";
    case DType::float64: return "double";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::bfloat16: return "bfloat16";
  }
  return "?";
}

struct Row {
  std::string collective, algorithm, dtype, op;
  int root;
  int64_t bytes, count;
  double time_us[2], algbw[2], busbw[2];
  int64_t wrong[2];
};

// Combines this rank's time across ranks as -a says: 0 rank 0, 1 mean, 2 min, 3 max.
double combine(comm::Communicator& comm, double seconds, int average) {
  if (average == 0) {
    Tensor t = full({1}, seconds, DType::float64);
    comm.broadcast(t, 0);
    return t.item();
  }
  return over_ranks(comm, seconds, average == 2 ? ReduceOp::min : average == 3 ? ReduceOp::max : ReduceOp::avg);
}

}  // namespace

int main(int argc, char** argv) {
  comm::install_terminate_handler("ringdp-bench");
  Options o;
  CLI::App app{"ringdp-bench: collective bandwidth, nccl-tests compatible. Sizes in bytes (K/M/G = 1024^n); "
               "GB/s means 1e9 bytes per second."};
  app.option_defaults()->always_capture_default();
  app.add_option("collective", o.collective, "all_reduce, reduce, broadcast, all_gather, reduce_scatter, barrier or all");
  app.add_option("-b,--minbytes", o.min_bytes, "smallest size");
  app.add_option("-e,--maxbytes", o.max_bytes, "largest size");
  app.add_option("-f,--stepfactor", o.factor, "multiply the size by this each step")->check(CLI::Range(1.0, 1e6));
  app.add_option("-i,--stepbytes", o.step_bytes, "add this to the size each step (when -f is 1)");
  app.add_option("-n,--iters", o.iters, "timed iterations per size")->check(CLI::Range(1, 1000000));
  app.add_option("-w,--warmup_iters", o.warmup, "untimed iterations first")->check(CLI::Range(0, 1000000));
  app.add_option("-c,--check", o.check, "check results (0: off)")->check(CLI::Range(0, 1000000));
  app.add_option("-o,--op", o.op, "sum, prod, min, max, avg or all")->check(CLI::IsMember({"sum", "prod", "min", "max", "avg", "all"}));
  app.add_option("-d,--datatype", o.dtype, "float, double, int32, int64, bfloat16 or all")
      ->check(CLI::IsMember({"float", "double", "int32", "int64", "bfloat16", "float32", "float64", "all"}));
  app.add_option("-r,--root", o.root, "root of reduce and broadcast");
  app.add_option("-a,--average", o.average, "time across ranks: 0 rank 0, 1 mean, 2 min, 3 max")->check(CLI::Range(0, 3));
  app.add_option("-z,--blocking", o.blocking, "1: wait for each collective; 0: issue all iterations, then wait")->check(CLI::Range(0, 1));
  app.add_option("--algo", o.algo, "ring, recursive_doubling, tree, native, auto or all")
      ->check(CLI::IsMember({"ring", "recursive_doubling", "rd", "tree", "native", "auto", "all"}));
  app.add_option("--backend", o.backend, "mpi or nccl")->check(CLI::IsMember({"mpi", "nccl"}));
  app.add_option("--device", o.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--csv", o.csv_path, "write every row as CSV");
  app.add_option("--json", o.json_path, "write every row as JSON");
  app.add_option("--soak", o.soak, "instead of the table: N random checked collectives, and a memory-growth check")
      ->check(CLI::Range(int64_t{0}, int64_t{100000000}));
  app.add_option("--seed", o.seed, "seed of the soak's random choices");
  const bool rank_zero = comm::launcher_rank() == 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (rank_zero) std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    if (rank_zero) std::fprintf(stderr, "ringdp-bench: error: %s\n", e.what());
    return 2;
  }

  std::vector<const CollectiveSpec*> specs;
  int64_t min_bytes = 0, max_bytes = 0, step_bytes = 0;
  std::vector<DType> dtypes;
  std::vector<ReduceOp> ops;
  std::vector<comm::Algorithm> algos;
  try {
    if (o.collective == "all") {
      for (const auto& s : collective_table()) specs.push_back(&s);
    } else {
      specs.push_back(&find_collective(o.collective));
    }
    min_bytes = parse_size(o.min_bytes, "-b");
    max_bytes = parse_size(o.max_bytes, "-e");
    step_bytes = parse_size(o.step_bytes, "-i");
    RINGDP_CHECK(min_bytes <= max_bytes, "-b ", o.min_bytes, " is larger than -e ", o.max_bytes);
    RINGDP_CHECK(o.factor > 1 || step_bytes > 0, "-i must be positive when -f is 1");
    if (o.dtype == "all") dtypes = {DType::float32, DType::float64, DType::int32, DType::int64, DType::bfloat16};
    else dtypes = {parse_dtype(o.dtype)};
    if (o.op == "all") ops = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg};
    else ops = {parse_reduce_op(o.op)};
    RINGDP_CHECK(o.device == "cpu" || kernels::cuda_device_count() > 0, "--device cuda: no CUDA device is visible",
                 kernels::built_with_cuda() ? "" : " (ringdp was built without CUDA)");
    RINGDP_CHECK(o.backend == "mpi" || RINGDP_HAVE_NCCL, "--backend nccl: ringdp was built without NCCL; use --backend mpi");
    RINGDP_CHECK(o.backend == "mpi" || o.device == "cuda", "--backend nccl needs --device cuda (NCCL moves GPU memory)");
  } catch (const Error& e) {
    if (rank_zero) std::fprintf(stderr, "ringdp-bench: error: %s\n", e.what());
    return 2;
  }

  try {
    comm::CommOptions comm_options;
    comm_options.backend = o.backend;
    auto communicator = comm::Communicator::init(comm_options);
    comm::Communicator& comm = *communicator;
    const int N = comm.size();
    const Device device = o.device == "cpu" ? Device::cpu() : Device::cuda(comm.local_rank() % kernels::cuda_device_count());
    if (o.root < 0 || o.root >= N) {
      comm::fail_job("ringdp-bench", "-r " + std::to_string(o.root) + " out of range for " + std::to_string(N) +
                     " ranks (expected 0.." + std::to_string(N - 1) + ")", 2);
    }
    if (o.soak > 0) {
      const SoakResult soak = run_soak(comm, o.soak, o.seed);
      // Growth allowance: allocator noise of a few MiB; a per-call leak of even 1 KiB over
      // 10,000 calls would exceed it.
      const bool grew = soak.rss_at_end_mb > soak.rss_after_warmup_mb * 1.05 + 4.0;
      if (comm.rank() == 0) {
        std::printf("# soak: %lld collectives on %d ranks, %lld wrong elements; resident memory %.1f MiB after "
                    "warm-up, %.1f MiB at the end (largest rank): %s\n",
                    static_cast<long long>(soak.collectives), N, static_cast<long long>(soak.wrong), soak.rss_after_warmup_mb,
                    soak.rss_at_end_mb, grew ? "GREW" : "stable");
      }
      return soak.wrong || grew ? 1 : 0;
    }
    std::vector<Row> rows;
    int64_t total_wrong = 0;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    if (comm.rank() == 0) {
      std::printf("# ringdp-bench %s: %d ranks, backend %s, device %s, host %s\n", RINGDP_VERSION, N, comm.backend_name(),
                  device.str().c_str(), host);
      const std::string step = o.factor > 1 ? CLI::detail::to_string(o.factor) + "(factor)" : std::to_string(step_bytes) + "(bytes)";
      std::printf("# minBytes %lld maxBytes %lld step: %s warmup iters: %d iters: %d validation: %d blocking: %d\n",
                  static_cast<long long>(min_bytes), static_cast<long long>(max_bytes), step.c_str(), o.warmup, o.iters,
                  o.check, o.blocking);
      std::printf("# GB/s = 1e9 bytes/s. all_gather/reduce_scatter sizes are the whole gathered array. busbw factors: "
                  "all_reduce 2(N-1)/N, all_gather and reduce_scatter (N-1)/N, reduce and broadcast 1.\n#\n");
    }
    for (const CollectiveSpec* spec : specs) {
      std::vector<comm::Algorithm> spec_algos;
      const std::vector<comm::Algorithm> candidates = {comm::Algorithm::ring, comm::Algorithm::recursive_doubling,
                                                       comm::Algorithm::tree, comm::Algorithm::native};
      if (o.algo == "all") {
        for (auto a : candidates) {
          try {
            comm.resolve(spec->kind, 1 << 20, a);
            spec_algos.push_back(a);
          } catch (const Error&) {
          }
        }
      } else {
        const comm::Algorithm requested = comm::parse_algorithm(o.algo);
        try {
          comm.resolve(spec->kind, 1 << 20, requested);
          spec_algos.push_back(requested);
        } catch (const Error& e) {
          if (specs.size() == 1) throw;
          if (comm.rank() == 0) std::printf("# %s: skipped (%s has no %s algorithm)\n", spec->name, spec->name, o.algo.c_str());
        }
      }
      for (comm::Algorithm algo : spec_algos) {
        if (comm.rank() == 0) {
          std::printf("# %s, algorithm %s\n", spec->name, comm::algorithm_name(algo));
          std::printf("#%13s %13s %9s %7s %5s   %9s %8s %8s %6s   %9s %8s %8s %6s\n", "size", "count", "type", "redop",
                      "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
          std::printf("#%13s %13s %9s %7s %5s   %9s %8s %8s %6s   %9s %8s %8s %6s\n", "(B)", "(elements)", "", "", "",
                      "(us)", "(GB/s)", "(GB/s)", "out", "(us)", "(GB/s)", "(GB/s)", "in");
        }
        for (DType dtype : dtypes) {
          for (ReduceOp op : spec->has_op ? ops : std::vector<ReduceOp>{ReduceOp::sum}) {
            if (op == ReduceOp::avg && !is_floating(dtype)) continue;
            for (int64_t bytes = min_bytes; bytes <= max_bytes;
                 bytes = o.factor > 1 ? std::max<int64_t>(bytes + 1, static_cast<int64_t>(bytes * o.factor)) : bytes + step_bytes) {
              const int64_t elements = bytes / static_cast<int64_t>(dtype_size(dtype));
              const int64_t in_count = spec->input_count(elements, N), out_count = spec->output_count(elements, N);
              const Case c{comm, dtype, op, o.root, algo};
              Row row{spec->name, comm::algorithm_name(algo), short_type(dtype), spec->has_op ? reduce_op_name(op) : "none",
                      spec->has_root ? o.root : -1,
                      std::max(in_count, out_count) * static_cast<int64_t>(dtype_size(dtype)), std::max(in_count, out_count),
                      {0, 0}, {0, 0}, {0, 0}, {0, 0}};
              for (int in_place = 0; in_place < 2; ++in_place) {
                Tensor input = zeros({in_count}, dtype, device);
                Tensor output = zeros({out_count}, dtype, device);
                if (in_place) {
                  // In place: the output is the input itself, or the rank's chunk of it.
                  if (spec->kind == comm::CollectiveKind::all_gather) input = output.flat_view(comm.rank() * in_count, in_count);
                  else if (spec->kind == comm::CollectiveKind::reduce_scatter) output = input.flat_view(comm.rank() * out_count, out_count);
                  else output = input;
                }
                fill_verifiable(*spec, c, input);
                for (int i = 0; i < o.warmup; ++i) run_collective(*spec, c, input, output, false);
                comm.barrier();  // ours, not MPI_Barrier: covered by the watchdog
                const auto start = Clock::now();
                std::vector<comm::Work> works;
                for (int i = 0; i < o.iters; ++i) works.push_back(run_collective(*spec, c, input, output, o.blocking == 0));
                for (auto& w : works) w.wait();
                // A collective on CUDA tensors returns once enqueued: time the GPU's work, as nccl-tests does.
                if (device.is_cuda()) kernels::cuda_device_synchronize();
                const double mine = std::chrono::duration<double>(Clock::now() - start).count() / o.iters;
                const double seconds = combine(comm, mine, o.average);
                int64_t wrong = 0;
                for (int i = 0; i < o.check; ++i) {
                  fill_verifiable(*spec, c, input);
                  run_collective(*spec, c, input, output, false);
                  wrong += count_wrong(*spec, c, output);
                }
                wrong = static_cast<int64_t>(over_ranks(comm, static_cast<double>(wrong), ReduceOp::sum));
                total_wrong += wrong;
                row.time_us[in_place] = seconds * 1e6;
                row.algbw[in_place] = seconds > 0 ? static_cast<double>(row.bytes) / seconds / 1e9 : 0;
                row.busbw[in_place] = row.algbw[in_place] * spec->bus_factor(N);
                row.wrong[in_place] = o.check ? wrong : -1;
              }
              if (comm.rank() == 0) {
                std::printf(" %13lld %13lld %9s %7s %5d   %9.2f %8.3f %8.3f %6lld   %9.2f %8.3f %8.3f %6lld\n",
                            static_cast<long long>(row.bytes), static_cast<long long>(row.count), row.dtype.c_str(),
                            row.op.c_str(), row.root, row.time_us[0], row.algbw[0], row.busbw[0],
                            static_cast<long long>(row.wrong[0]), row.time_us[1], row.algbw[1], row.busbw[1],
                            static_cast<long long>(row.wrong[1]));
                std::fflush(stdout);
              }
              rows.push_back(row);
              if (spec->kind == comm::CollectiveKind::barrier) break;  // one row: size means nothing
            }
          }
        }
      }
    }

    if (comm.rank() == 0) {
      double busbw_sum = 0;
      int busbw_n = 0;
      for (const Row& r : rows) {
        busbw_sum += r.busbw[0] + r.busbw[1];
        busbw_n += 2;
      }
      std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(total_wrong), total_wrong ? "FAILED" : "OK");
      std::printf("# Avg bus bandwidth    : %g\n#\n", busbw_n ? busbw_sum / busbw_n : 0.0);
      // Per algorithm: α–β fit on the out-of-place times of the largest group of rows.
      std::map<std::string, std::vector<Sample>> by_algo;
      for (const Row& r : rows)
        if (r.bytes > 0) by_algo[r.collective + " " + r.algorithm + " " + r.dtype + " " + r.op].push_back({r.bytes, r.time_us[0] * 1e-6, r.busbw[0]});
      std::printf("# Summary (out-of-place): time(bytes) = alpha + bytes / bandwidth, fitted to the sizes above by least squares on relative error\n");
      std::printf("# %-44s %10s %12s %6s %11s %14s\n", "collective algorithm type op", "alpha(us)", "bw(GB/s)", "fit",
                  "peak busbw", "80% of peak at");
      for (const auto& [key, samples] : by_algo) {
        const AlphaBeta fit = fit_alpha_beta(samples);
        std::printf("# %-44s %10.2f %12.3f %6.3f %11.3f %12lld B\n", key.c_str(), fit.alpha_us, fit.bandwidth, fit.r_squared,
                    fit.peak_busbw, static_cast<long long>(fit.bytes_at_80));
      }
      if (o.algo == "all") {
        std::printf("#\n# busbw as a ratio of native (out-of-place), per size\n");
        std::map<std::string, double> native;
        for (const Row& r : rows)
          if (r.algorithm == "native") native[r.collective + r.dtype + r.op + std::to_string(r.bytes)] = r.busbw[0];
        for (const Row& r : rows) {
          if (r.algorithm == "native") continue;
          const double base = native[r.collective + r.dtype + r.op + std::to_string(r.bytes)];
          if (base > 0) std::printf("# %-15s %-19s %12lld B  %6.2fx\n", r.collective.c_str(), r.algorithm.c_str(),
                                    static_cast<long long>(r.bytes), r.busbw[0] / base);
        }
      }
      if (!o.csv_path.empty()) {
        std::ofstream csv(o.csv_path);
        RINGDP_CHECK(csv.good(), "--csv: cannot write '", o.csv_path, "'");
        csv << "collective,algorithm,backend,device,ranks,dtype,op,root,bytes,count,time_us_out,algbw_out,busbw_out,wrong_out,"
               "time_us_in,algbw_in,busbw_in,wrong_in\n";
        for (const Row& r : rows)
          csv << r.collective << ',' << r.algorithm << ',' << comm.backend_name() << ',' << device.str() << ',' << N << ','
              << r.dtype << ',' << r.op << ',' << r.root << ',' << r.bytes << ',' << r.count << ',' << r.time_us[0] << ','
              << r.algbw[0] << ',' << r.busbw[0] << ',' << r.wrong[0] << ',' << r.time_us[1] << ',' << r.algbw[1] << ','
              << r.busbw[1] << ',' << r.wrong[1] << '\n';
      }
      if (!o.json_path.empty()) {
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (const Row& r : rows)
          out.push_back({{"collective", r.collective}, {"algorithm", r.algorithm}, {"backend", comm.backend_name()},
                         {"device", device.str()}, {"ranks", N}, {"dtype", r.dtype}, {"op", r.op}, {"root", r.root},
                         {"bytes", r.bytes}, {"count", r.count},
                         {"out_of_place", {{"time_us", r.time_us[0]}, {"algbw", r.algbw[0]}, {"busbw", r.busbw[0]}, {"wrong", r.wrong[0]}}},
                         {"in_place", {{"time_us", r.time_us[1]}, {"algbw", r.algbw[1]}, {"busbw", r.busbw[1]}, {"wrong", r.wrong[1]}}}});
        std::ofstream json(o.json_path);
        RINGDP_CHECK(json.good(), "--json: cannot write '", o.json_path, "'");
        json << out.dump(1) << "\n";
      }
    }
    return total_wrong ? 1 : 0;
  } catch (const std::exception& e) {
    comm::fail_job("ringdp-bench", e.what(), 1);
  }
}

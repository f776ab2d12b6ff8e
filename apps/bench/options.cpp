// Implements apps/bench/options.h (the contract is documented there). Tested by tests/cli/bench.sh (errors,
// table).
#include "apps/bench/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/bootstrap/mpi_runtime.h"
#include "config.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/file_identity.h"
#include "core/settings.h"
#include "kernels/device_memory.h"

namespace ringdp::bench {

namespace {
// The largest size a sweep may name: 1 TiB, above any one buffer a host here can hold.
constexpr int64_t kMaxSizeBytes = int64_t{1} << 40;

int64_t parse_size(const std::string& text, const char* flag) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  RINGDP_CHECK(end != text.c_str() && value >= 0, flag, ": '", text,
               "' is not a size (a number with an optional K, M or G)");
  double scale = 1;
  const std::string suffix(end);
  if (suffix == "K" || suffix == "k")
    scale = 1024.0;
  else if (suffix == "M" || suffix == "m")
    scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g")
    scale = 1024.0 * 1024 * 1024;
  else
    RINGDP_CHECK(suffix.empty(), flag, ": '", text, "' has an unknown suffix '", suffix, "' (K, M or G)");
  // Checked before the cast: 1e30 (or inf) bytes came out as a negative extent, and a huge -e as
  // a -b larger than it.
  const double bytes = value * scale;
  RINGDP_CHECK(std::isfinite(bytes) && bytes <= static_cast<double>(kMaxSizeBytes), flag, ": '", text,
               "' is out of range: a size is 0 to 1024G (", kMaxSizeBytes, " bytes)");
  return static_cast<int64_t>(bytes);
}

// The rows are written after the whole sweep: a missing folder is found before it starts.
const CLI::Validator kOutputFile(
    [](std::string& path) -> std::string {
      if (path.empty()) return "an empty path; name a file";
      const std::string problem = output_file_problem(path);
      return problem.empty() ? problem : "'" + path + "': " + problem;
    },
    "PATH");

// An empty path names no file (it wrote nothing, exit 0), and the two outputs must be two files
// (--csv X --json X kept only the JSON): what is wrong, or "".
std::string outputs_problem(const CLI::App& app, const Options& o) {
  const std::vector<NamedPath> outputs = {{"--csv", o.csv_path, true}, {"--json", o.json_path, true}};
  for (const NamedPath& p : outputs)
    if (app.count(p.flag) > 0 && p.path.empty()) return p.flag + ": an empty path; name a file";
  try {
    require_distinct_outputs(outputs);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}
}  // namespace

std::optional<int> parse_command_line(int argc, char** argv, Options& o) {
  CLI::App app{
      "ringdp-bench: collective bandwidth, nccl-tests compatible. Sizes in bytes (K/M/G = 1024^n); "
      "GB/s means 1e9 bytes per second."};
  app.option_defaults()->always_capture_default();
  app.add_option(
      "collective", o.collective,
      "all_reduce, reduce, broadcast, all_gather, reduce_scatter, barrier, gather, scatter, alltoall or all");
  app.add_option("-b,--minbytes", o.min_bytes, "smallest size");
  app.add_option("-e,--maxbytes", o.max_bytes, "largest size");
  app.add_option("-f,--stepfactor", o.factor, "multiply the size by this each step")
      ->check(CLI::Range(1.0, 1e6));
  app.add_option("-i,--stepbytes", o.step_bytes, "add this to the size each step (when -f is 1)");
  app.add_option("-n,--iters", o.iters, "timed iterations per size")->check(CLI::Range(1, 1000000));
  app.add_option("-w,--warmup_iters", o.warmup, "untimed iterations first")->check(CLI::Range(0, 1000000));
  app.add_option("-c,--check", o.check, "check results (0: off)")->check(CLI::Range(0, 1000000));
  app.add_option("-o,--op", o.op, "sum, prod, min, max, avg, band, bor, bxor or all (the first five)")
      ->check(CLI::IsMember({"sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "all"}));
  app.add_option("-d,--datatype", o.dtype,
                 "float, double, half, bfloat16, int64, int32, int8, uint8, bool or all")
      ->check(CLI::IsMember({"float", "double", "half", "bfloat16", "int64", "int32", "int8", "uint8", "bool",
                             "float32", "float64", "float16", "all"}));
  app.add_option("-r,--root", o.root, "root of reduce and broadcast");
  app.add_option("-a,--average", o.average, "time across ranks: 0 rank 0, 1 mean, 2 min, 3 max")
      ->check(CLI::Range(0, 3));
  app.add_option("-z,--blocking", o.blocking,
                 "1: wait for each collective; 0: issue all iterations, then wait")
      ->check(CLI::Range(0, 1));
  app.add_option(
         "--algo", o.algo,
         "ring, recursive_doubling, rabenseifner (all_reduce), shared_memory (all_reduce, every rank on one "
         "host, host tensors), tree, hierarchical (all_reduce across hosts, host tensors), chain "
         "(broadcast), pairwise (all_to_all), dissemination (barrier), native, auto or all "
         "(docs/collectives.md "
         "has each collective's table)")
      ->check(
          CLI::IsMember({"ring", "recursive_doubling", "rd", "rabenseifner", "shared_memory", "shm", "tree",
                         "hierarchical", "chain", "pairwise", "dissemination", "native", "auto", "all"}));
  app.add_option("--backend", o.backend, "mpi, nccl (CUDA tensors) or ucx (host tensors; docs/ucx.md)")
      ->check(CLI::IsMember({"mpi", "nccl", "ucx"}));
  app.add_option("--device", o.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--buffers", o.buffers,
                 "plain: each row allocates its tensors; shared: every row's tensors are views of two "
                 "buffers from Communicator::allocate_shared (every rank on one host, cpu), which all_reduce "
                 "reduces straight out of each other")
      ->check(CLI::IsMember({"plain", "shared"}));
  app.add_option("--csv", o.csv_path,
                 "write every row as CSV (algorithm: the one asked for; ran: the one that ran)")
      ->check(kOutputFile);
  app.add_option("--json", o.json_path, "write every row as JSON (the CSV's fields)")->check(kOutputFile);
  app.add_option("--soak", o.soak,
                 "instead of the table: N random checked collectives, and a memory-growth check")
      ->check(CLI::Range(int64_t{0}, int64_t{100000000}));
  app.add_option("--seed", o.seed, "seed of the soak's random choices");
  bool help_env = false, help_env_markdown = false;
  app.add_flag("--help-env", help_env, "list the RINGDP_* environment variables and exit");
  app.add_flag("--help-env-markdown", help_env_markdown, "the same list as docs/settings.md's table")
      ->group("");
  const bool rank_zero = comm::launcher_rank() == 0;
  try {
    app.parse(argc, argv);
    if (help_env || help_env_markdown) {
      if (rank_zero)
        std::fputs((help_env ? settings::help_text() : settings::markdown_table()).c_str(), stdout);
      return 0;
    }
  } catch (const CLI::CallForHelp&) {
    if (rank_zero) std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    if (rank_zero) std::fprintf(stderr, "ringdp-bench: error: %s\n", e.what());
    return 2;
  }
  const std::string problem = outputs_problem(app, o);
  if (!problem.empty()) {
    if (rank_zero) std::fprintf(stderr, "ringdp-bench: error: %s\n", problem.c_str());
    return 2;
  }
  return std::nullopt;
}

Sweep make_sweep(const Options& o) {
  Sweep sweep;
  if (o.collective == "all") {
    for (const auto& s : collective_table()) sweep.specs.push_back(&s);
  } else {
    sweep.specs.push_back(&find_collective(o.collective));
  }
  sweep.min_bytes = parse_size(o.min_bytes, "-b");
  sweep.max_bytes = parse_size(o.max_bytes, "-e");
  sweep.step_bytes = parse_size(o.step_bytes, "-i");
  sweep.factor = o.factor;
  RINGDP_CHECK(sweep.min_bytes <= sweep.max_bytes, "-b ", o.min_bytes, " is larger than -e ", o.max_bytes);
  RINGDP_CHECK(o.factor > 1 || sweep.step_bytes > 0, "-i must be positive when -f is 1");
  if (o.dtype == "all")
    sweep.dtypes = {DType::float32, DType::float64, DType::float16, DType::bfloat16, DType::int64,
                    DType::int32,   DType::int8,    DType::uint8,   DType::boolean};
  else
    sweep.dtypes = {parse_dtype(o.dtype)};
  if (o.op == "all")
    sweep.ops = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg};
  else
    sweep.ops = {parse_reduce_op(o.op)};
  // avg needs a floating-point type: asked for with an integer type by name, that is an error;
  // within -d all or -o all the pairs are skipped, and the preamble says so.
  const bool reduces = std::any_of(sweep.specs.begin(), sweep.specs.end(), [](auto* s) { return s->has_op; });
  RINGDP_CHECK(!reduces || o.op != "avg" || o.dtype == "all" || is_floating(sweep.dtypes.front()),
               "-o avg -d ", o.dtype,
               ": avg is defined for floating-point types only (float, double, half, bfloat16)");
  RINGDP_CHECK(!reduces || o.op == "all" || !is_bitwise(sweep.ops.front()) || o.dtype == "all" ||
                   !is_floating(sweep.dtypes.front()),
               "-o ", o.op, " -d ", o.dtype, ": ", o.op,
               " is defined for integer types and bool only (int64, int32, int8, uint8, bool)");
  RINGDP_CHECK(o.backend != "ucx" || RINGDP_HAVE_UCX,
               "--backend ucx: ringdp was built without UCX (install libucx-dev and reconfigure); use "
               "--backend mpi");
  RINGDP_CHECK(o.backend != "ucx" || o.device == "cpu",
               "--backend ucx carries host tensors; use --device cpu, or --backend nccl or mpi for "
               "CUDA tensors");
  RINGDP_CHECK(o.device == "cpu" || kernels::cuda_device_count() > 0,
               "--device cuda: no CUDA device is visible",
               kernels::built_with_cuda() ? "" : " (ringdp was built without CUDA)");
  RINGDP_CHECK(o.backend != "nccl" || RINGDP_HAVE_NCCL,
               "--backend nccl: ringdp was built without NCCL; use --backend mpi");
  RINGDP_CHECK(o.backend != "nccl" || o.device == "cuda",
               "--backend nccl needs --device cuda (NCCL moves GPU memory)");
  return sweep;
}

int64_t Sweep::next(int64_t bytes) const {
  return factor > 1 ? std::max<int64_t>(bytes + 1, static_cast<int64_t>(bytes * factor)) : bytes + step_bytes;
}

std::string step_text(const Options& o, const Sweep& sweep) {
  return o.factor > 1 ? CLI::detail::to_string(o.factor) + "(factor)"
                      : std::to_string(sweep.step_bytes) + "(bytes)";
}

}  // namespace ringdp::bench

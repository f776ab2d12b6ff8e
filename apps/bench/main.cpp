// ringdp-bench: nccl-tests' command line and table for ringdp's collectives, plus what
// nccl-tests does not print: per-algorithm α–β fits, peak bus bandwidth, the size reaching 80%
// of it, and (with --algo all) each algorithm's bus bandwidth as a ratio of the native one.
//   mpirun -np 4 ringdp-bench all_reduce -b 8 -e 128M -f 2 --algo all --csv out.csv
// As in nccl-tests: the collectives are a table of functions (collectives.h), one function
// times a row (timed_row.h), and the report takes the rows (report.h). Tested by tests/cli/bench.sh.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "apps/bench/options.h"
#include "apps/bench/report.h"
#include "apps/bench/soak.h"
#include "apps/bench/timed_row.h"
#include "comm/algorithm_table.h"
#include "comm/bootstrap/mpi_runtime.h"
#include "config.h"
#include "kernels/device_memory.h"

using namespace ringdp;
using namespace ringdp::bench;

namespace {

// The algorithms of `spec` that --algo asks for: all it has, or the one named (an error when it
// lacks it and it is the only collective; otherwise a skipped line).
std::vector<comm::Algorithm> algorithms_for(const CollectiveSpec& spec, const Options& o,
                                            comm::Communicator& comm, bool only_collective) {
  std::vector<comm::Algorithm> algorithms;
  const comm::AlgorithmSet available = comm.available(spec.kind, Device::parse(o.device));
  if (o.algo == "all") {
    for (const comm::AlgorithmRow& row : comm::algorithm_table(spec.kind))
      if (available.contains(row.algorithm)) algorithms.push_back(row.algorithm);
    return algorithms;
  }
  const comm::Algorithm requested = comm::parse_algorithm(o.algo);
  if (requested == comm::Algorithm::automatic || available.contains(requested)) {
    algorithms.push_back(requested);
  } else if (only_collective) {
    comm.resolve(spec.kind, 1 << 20, requested);  // throws, naming what is available
  } else if (comm.rank() == 0) {
    std::printf("# %s: skipped (%s has no %s algorithm)\n", spec.name, spec.name, o.algo.c_str());
  }
  return algorithms;
}

// --buffers shared: two buffers from allocate_shared, each as large as the sweep's largest input
// or output, which every row views from its start (apps/bench/timed_row.h). Collective.
void allocate_shared_buffers(comm::Communicator& comm, const Options& o, const Sweep& sweep, Device device,
                             Timing& timing) {
  RINGDP_CHECK(device.is_cpu(), "--buffers shared: shared allocations are host memory; got --device ",
               o.device);
  int64_t bytes = 64;
  for (const CollectiveSpec* spec : sweep.specs)
    for (DType dtype : sweep.dtypes) {
      const auto size = static_cast<int64_t>(dtype_size(dtype));
      const int64_t elements = sweep.max_bytes / size;
      bytes = std::max({bytes, spec->input_count(elements, comm.size()) * size,
                        spec->output_count(elements, comm.size()) * size});
    }
  timing.shared_input = comm.allocate_shared({bytes}, DType::uint8);
  timing.shared_output = comm.allocate_shared({bytes}, DType::uint8);
}

int run_soak_mode(comm::Communicator& comm, const Options& o) {
  const SoakResult soak = run_soak(comm, o.soak, o.seed);
  // Growth allowance: allocator noise of a few MiB; a per-call leak of even 1 KiB over
  // 10,000 calls would exceed it.
  const bool grew = soak.rss_at_end_mb > soak.rss_after_warmup_mb * 1.05 + 4.0;
  if (comm.rank() == 0) {
    std::printf(
        "# soak: %lld collectives on %d ranks, %lld wrong elements; resident memory %.1f MiB after "
        "warm-up, %.1f MiB at the end (largest rank): %s\n",
        static_cast<long long>(soak.collectives), comm.size(), static_cast<long long>(soak.wrong),
        soak.rss_after_warmup_mb, soak.rss_at_end_mb, grew ? "GREW" : "stable");
  }
  return soak.wrong || grew ? 1 : 0;
}

void print_preamble(const Options& o, const Sweep& sweep, comm::Communicator& comm, Device device) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::printf("# ringdp-bench %s: %d ranks, backend %s, device %s, host %s\n", RINGDP_VERSION, comm.size(),
              comm.backend_name(), device.str().c_str(), host);
  std::printf(
      "# minBytes %lld maxBytes %lld step: %s warmup iters: %d iters: %d validation: %d blocking: %d\n",
      static_cast<long long>(sweep.min_bytes), static_cast<long long>(sweep.max_bytes),
      step_text(o, sweep).c_str(), o.warmup, o.iters, o.check, o.blocking);
  if (const char* level = comm::mpi_thread_level_name())
    std::printf("# MPI thread level: %s%s\n", level,
                std::string_view(level) == "single" && o.blocking != 0
                    ? " (a blocking run needs no worker thread; RINGDP_MPI_THREAD=multiple for the level "
                      "asynchronous calls use)"
                    : "");
  std::printf(
      "# GB/s = 1e9 bytes/s. all_gather/reduce_scatter/gather/scatter sizes are the whole gathered array, "
      "alltoall's each rank's buffer. busbw factors: all_reduce 2(N-1)/N, all_gather, reduce_scatter, "
      "gather, scatter and alltoall (N-1)/N, reduce and broadcast 1.\n");
  std::string skipped;
  if (std::find(sweep.ops.begin(), sweep.ops.end(), ReduceOp::avg) != sweep.ops.end())
    for (DType d : sweep.dtypes)
      if (!is_floating(d)) skipped += std::string(skipped.empty() ? "" : ", ") + short_type(d);
  if (!skipped.empty())
    std::printf("# avg is skipped for %s: it is defined for floating-point types only\n", skipped.c_str());
  skipped.clear();
  if (std::any_of(sweep.ops.begin(), sweep.ops.end(), [](ReduceOp op) { return is_bitwise(op); }))
    for (DType d : sweep.dtypes)
      if (is_floating(d)) skipped += std::string(skipped.empty() ? "" : ", ") + short_type(d);
  if (!skipped.empty())
    std::printf("# bitwise ops are skipped for %s: they are defined for integer types only\n",
                skipped.c_str());
  std::printf("#\n");
}

}  // namespace

int main(int argc, char** argv) {
  comm::install_terminate_handler("ringdp-bench");
  Options o;
  if (const auto stop = parse_command_line(argc, argv, o)) return *stop;
  Sweep sweep;
  try {
    sweep = make_sweep(o);
  } catch (const Error& e) {
    if (comm::launcher_rank() == 0) std::fprintf(stderr, "ringdp-bench: error: %s\n", e.what());
    return 2;
  }

  try {
    comm::CommOptions comm_options;
    // ucx carries host tensors; naming MPI for CUDA tensors keeps NCCL from claiming the banner
    // and CSV's "backend" where a GPU is visible.
    comm_options.backend = comm::parse_backend(o.backend == "ucx" ? "mpi" : o.backend);
    if (o.backend == "ucx") comm_options.host_transport = comm::HostTransport::ucx;
    // A blocking run needs no worker thread, so it asks MPI for MPI_THREAD_SINGLE, as a plain MPI
    // program (and the OSU benchmarks) does: above it, Open MPI locks on every call, which would
    // be counted as the collective's cost. -z 0 issues asynchronous calls, which need the worker.
    if (o.blocking != 0) comm_options.mpi_thread = comm::MpiThread::single;
    auto communicator = comm::Communicator::init(comm_options);
    comm::Communicator& comm = *communicator;
    const int N = comm.size();
    const Device device = o.device == "cpu" ? Device::cpu() : comm.device();
    if (o.root < 0 || o.root >= N) {
      comm::fail_job("ringdp-bench",
                     "-r " + std::to_string(o.root) + " out of range for " + std::to_string(N) +
                         " ranks (expected 0.." + std::to_string(N - 1) + ")",
                     2);
    }
    if (o.soak > 0) return run_soak_mode(comm, o);

    const bool rank_zero = comm.rank() == 0;
    if (rank_zero) print_preamble(o, sweep, comm, device);
    Timing timing{o.iters, o.warmup, o.check, o.average, o.blocking != 0, device, {}, {}};
    if (o.buffers == "shared") allocate_shared_buffers(comm, o, sweep, device, timing);
    std::vector<Row> rows;
    int64_t total_wrong = 0;
    for (const CollectiveSpec* spec : sweep.specs) {
      for (comm::Algorithm algo : algorithms_for(*spec, o, comm, sweep.specs.size() == 1)) {
        if (rank_zero) print_table_header(spec->name, comm::algorithm_name(algo));
        for (DType dtype : sweep.dtypes) {
          for (ReduceOp op : spec->has_op ? sweep.ops : std::vector<ReduceOp>{ReduceOp::sum}) {
            if (op == ReduceOp::avg && !is_floating(dtype)) continue;
            if (is_bitwise(op) && is_floating(dtype)) continue;
            for (int64_t bytes = sweep.min_bytes; bytes <= sweep.max_bytes; bytes = sweep.next(bytes)) {
              const Case c{comm, dtype, op, o.root, algo};
              const Row row = time_row(*spec, c, bytes / static_cast<int64_t>(dtype_size(dtype)), timing);
              total_wrong += std::max<int64_t>(row.wrong[0], 0) + std::max<int64_t>(row.wrong[1], 0);
              if (rank_zero) print_row(row);
              rows.push_back(row);
              if (spec->kind == comm::CollectiveKind::barrier) break;  // one row: size means nothing
            }
          }
        }
      }
    }
    if (rank_zero) {
      print_summary(rows, total_wrong, o.algo == "all");
      const RunInfo run{N, comm.backend_name(), device.str()};
      if (!o.csv_path.empty()) write_csv(o.csv_path, rows, run);
      if (!o.json_path.empty()) write_json(o.json_path, rows, run);
    }
    return total_wrong ? 1 : 0;
  } catch (const std::exception& e) {
    comm::fail_job("ringdp-bench", e.what(), 1);
  }
}

// DDP step benchmark: median step time and overlap of an MLP (default 1024→4096→4096→1024) with a
// batch of 64 per rank, float32 on the CPU. Run by perf/ddp.sh on 1, 2 and 4 ranks and by
// perf/ddp_buckets.py (bucket caps, overlap on and off); not a test.
//   mpirun -np 4 build/perf/ringdp-ddp-bench [steps [bucket_mb [overlap 1|0|shared|compute [widths
//   [batch]]]]]
// overlap `shared`: overlapped, with the buckets in shared memory (DdpOptions::shared_buckets: the
// direct all-reduce, every rank on one host).
// overlap `compute`: the same model, data and optimizer without DDP and without communication, on
// one rank: the step's math alone, which perf/ddp-vs-torch.sh sets beside the DDP step.
// widths: the layer sizes, comma-separated (default 1024,4096,4096,1024); batch: samples per rank
// (default 64). The seed's job is widths 10,1 and batch 100 on 4 ranks (perf/ddp-vs-torch.sh).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/layers.h"
#include "autograd/optim/sgd.h"
#include "comm/bootstrap/mpi_runtime.h"
#include "comm/ddp/distributed_data_parallel.h"

using namespace ringdp;
using namespace ringdp::autograd;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The step of the DDP loop below with the model itself in place of DDP.
int report_compute_only(Sequential& model, optim::SGD& sgd, const Tensor& x, const Tensor& y, int steps) {
  std::vector<double> step_s, backward_s;
  for (int step = 0; step < steps + 1; ++step) {  // step 0 warms up
    const auto start = std::chrono::steady_clock::now();
    sgd.zero_grad();
    const Tensor loss = mse_loss(model(x), y);
    const auto backward_start = std::chrono::steady_clock::now();
    loss.backward();
    const auto backward_end = std::chrono::steady_clock::now();
    sgd.step();
    if (step == 0) continue;
    step_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    backward_s.push_back(std::chrono::duration<double>(backward_end - backward_start).count());
  }
  std::printf("ranks 1  compute only  median step %.3f ms  backward %.1f ms\n", 1e3 * median(step_s),
              1e3 * median(backward_s));
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  comm::install_terminate_handler("ringdp-ddp-bench");
  const int steps = argc > 1 ? std::atoi(argv[1]) : 8;
  const double bucket_mb = argc > 2 ? std::atof(argv[2]) : 25.0;
  const bool compute_only = argc > 3 && std::string(argv[3]) == "compute";
  const bool shared_buckets = argc > 3 && std::string(argv[3]) == "shared";
  const bool overlapping = argc > 3 && !compute_only && !shared_buckets ? std::atoi(argv[3]) != 0 : true;
  std::vector<int64_t> widths;
  std::istringstream list(argc > 4 ? argv[4] : "1024,4096,4096,1024");
  for (std::string w; std::getline(list, w, ',');) widths.push_back(std::atoll(w.c_str()));
  if (widths.size() < 2 || *std::min_element(widths.begin(), widths.end()) <= 0) {
    std::fprintf(stderr, "ringdp-ddp-bench: widths '%s': expected two or more positive layer sizes\n",
                 argc > 4 ? argv[4] : "");
    return 2;
  }
  const int64_t batch = argc > 5 ? std::atoll(argv[5]) : 64;
  if (batch <= 0) {
    std::fprintf(stderr, "ringdp-ddp-bench: batch '%s': expected a positive number of samples per rank\n",
                 argv[5]);
    return 2;
  }
  auto world = comm::Communicator::init();
  if (compute_only && world->size() != 1) {
    std::fprintf(stderr, "ringdp-ddp-bench: compute: runs on 1 rank, not %d (it measures the math alone)\n",
                 world->size());
    return 2;
  }
  auto model = std::make_shared<Sequential>();
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    model->push_back(std::make_shared<Linear>(LinearOptions(widths[i], widths[i + 1]), i + 1));
    if (i + 2 < widths.size()) model->push_back(std::make_shared<ReLU>());
  }
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.001));
  const Tensor x = randn({batch, widths.front()}, 10 + world->rank()),
               y = randn({batch, widths.back()}, 20 + world->rank());
  if (compute_only) return report_compute_only(*model, sgd, x, y, steps);
  ddp::DistributedDataParallel ddp(
      model, world, {.bucket_cap_mb = bucket_mb, .overlap = overlapping, .shared_buckets = shared_buckets});
  std::vector<double> step_s, backward_s, wait_s, overlap;
  for (int step = 0; step < steps + 1; ++step) {  // step 0 warms up
    const auto start = std::chrono::steady_clock::now();
    sgd.zero_grad();
    ddp.backward(mse_loss(ddp(x), y));
    sgd.step();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (step == 0) continue;
    step_s.push_back(elapsed);
    backward_s.push_back(ddp.last_stats().backward_seconds);
    wait_s.push_back(ddp.last_stats().comm_wait_seconds);
    overlap.push_back(ddp.last_stats().overlap);
  }
  if (world->rank() == 0) {
    std::printf(
        "ranks %d  buckets %d  bytes/step %.1f MB  median step %.3f ms  backward %.1f ms  comm wait %.1f ms  "
        "overlap %s%s\n",
        world->size(), ddp.last_stats().buckets, ddp.last_stats().bytes_reduced / 1e6, 1e3 * median(step_s),
        1e3 * median(backward_s), 1e3 * median(wait_s),
        world->size() == 1 ? "n/a (nothing to communicate)"
                           : (std::to_string(static_cast<int>(100 * median(overlap))) + "%").c_str(),
        overlapping ? (shared_buckets ? "  (shared buckets)" : "") : "  (--no-overlap)");
  }
  return 0;
}

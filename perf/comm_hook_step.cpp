// Communication-hook benchmark: the median DDP step time of an MLP (default 512→1024→1024→512,
// batch 32 per rank, float32, CPU) with one hook, and the bytes the hook hands to collectives per
// step (DdpStepStats::bytes_reduced). Run by perf/comm-hooks.sh, which interleaves the hooks and
// rank counts; not a test.
//   mpirun -np 4 build/perf/ringdp-comm-hook-bench HOOK [steps [widths [batch]]]
// HOOK: none | fp16 | bf16 | powersgd:RANK (PowerSGD from the first step: start_powerSGD_iter 0).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "apps/train/comm_hook_setup.h"
#include "autograd/layers.h"
#include "autograd/optim/sgd.h"
#include "comm/bootstrap/mpi_runtime.h"
#include "comm/ddp/distributed_data_parallel.h"

using namespace ringdp;
using namespace ringdp::autograd;

int main(int argc, char** argv) {
  comm::install_terminate_handler("ringdp-comm-hook-bench");
  if (argc < 2) {
    std::fprintf(stderr, "usage: ringdp-comm-hook-bench HOOK [steps [widths [batch]]]\n");
    return 2;
  }
  train::CommHookChoice choice = train::parse_comm_hook(argv[1]);
  choice.start = 0;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  std::vector<int64_t> widths;
  std::istringstream list(argc > 3 ? argv[3] : "512,1024,1024,512");
  for (std::string w; std::getline(list, w, ',');) widths.push_back(std::atoll(w.c_str()));
  const int64_t batch = argc > 4 ? std::atoll(argv[4]) : 32;
  auto world = comm::Communicator::init();
  auto model = std::make_shared<Sequential>();
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    model->push_back(std::make_shared<Linear>(LinearOptions(widths[i], widths[i + 1]), i + 1));
    if (i + 2 < widths.size()) model->push_back(std::make_shared<ReLU>());
  }
  ddp::DistributedDataParallel ddp(model, world);
  train::install_comm_hook(choice, ddp, world);
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.001));
  const Tensor x = randn({batch, widths.front()}, 10 + world->rank()),
               y = randn({batch, widths.back()}, 20 + world->rank());
  std::vector<double> step_s;
  for (int step = 0; step < steps + 1; ++step) {  // step 0 warms up (and allocates PowerSGD's P, Q)
    const auto start = std::chrono::steady_clock::now();
    sgd.zero_grad();
    ddp.backward(mse_loss(ddp(x), y));
    sgd.step();
    if (step > 0)
      step_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(step_s.begin(), step_s.end());
  if (world->rank() == 0)
    std::printf("hook %s  ranks %d  bytes/step %lld  median step %.3f ms\n", argv[1], world->size(),
                static_cast<long long>(ddp.last_stats().bytes_reduced), 1e3 * step_s[step_s.size() / 2]);
  return 0;
}

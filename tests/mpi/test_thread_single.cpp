// MPI below MPI_THREAD_SERIALIZED: a program that initialised MPI itself at MPI_THREAD_SINGLE or
// FUNNELED, or RINGDP_MPI_THREAD=single. MPI then forbids calls from a second thread, so ringdp
// starts none: asynchronous collectives run on the caller's thread as they are issued, and DDP
// still trains (without overlap). Registered in tests/mpi/meson.build with the environment that
// makes the level so; the first assertion checks it is.
#include <catch2/catch.hpp>

#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include <mpi.h>

#include "autograd/layers.h"
#include "autograd/optim/sgd.h"
#include "comm/bootstrap/mpi_runtime.h"
#include "comm/ddp/distributed_data_parallel.h"
#include "tests/support/mpi_test.h"

using namespace ringdp;
using namespace ringdp::testing;

namespace {

int threads_in_process() {
  int threads = 0;
  if (DIR* tasks = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(tasks))
      if (entry->d_name[0] != '.') ++threads;
    closedir(tasks);
  }
  return threads;
}

// max - min over ranks of a value, through MPI directly.
double spread(double value) {
  double low = 0, high = 0;
  MPI_Allreduce(&value, &low, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&value, &high, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return high - low;
}

}  // namespace

TEST_CASE("below MPI_THREAD_SERIALIZED no thread starts and asynchronous work completes at issue",
          "[thread_single]") {
  auto& comm = world();
  int level = -1;
  MPI_Query_thread(&level);
  INFO("MPI thread level " << level);
  REQUIRE(level < MPI_THREAD_SERIALIZED);
  REQUIRE_FALSE(comm::mpi_allows_worker_thread());
  comm.barrier();  // whatever MPI starts on its first messages, before counting
  const int threads = threads_in_process();

  const int64_t n = 300001;  // several ring segments, not a multiple of any world size here
  for (auto algorithm :
       {comm::Algorithm::ring, comm::Algorithm::recursive_doubling, comm::Algorithm::native}) {
    INFO("algorithm " << comm::algorithm_name(algorithm));
    Tensor t = empty({n});
    fill_input(t, comm.rank(), ReduceOp::sum);
    comm::Work work = comm.all_reduce(t, ReduceOp::sum, {.algorithm = algorithm, .async = true});
    REQUIRE(work.is_completed());
    work.wait();
    REQUIRE(global_sum(count_wrong(t, comm.size(), ReduceOp::sum)) == 0);
  }
  Tensor root_value = full({1000}, comm.rank() == 0 ? 7.0 : -1.0);
  comm::Work broadcast = comm.broadcast(root_value, 0, {.async = true});
  REQUIRE(broadcast.is_completed());
  broadcast.wait();
  REQUIRE(global_sum(root_value.to_vector() != std::vector<double>(1000, 7.0)) == 0);

  // DDP launches its buckets asynchronously from the gradient hooks: they run there now.
  auto model =
      std::make_shared<autograd::Sequential>(std::initializer_list<std::shared_ptr<autograd::Module>>{
          std::make_shared<autograd::Linear>(autograd::LinearOptions(6, 16), 1),
          std::make_shared<autograd::ReLU>(),
          std::make_shared<autograd::Linear>(autograd::LinearOptions(16, 1), 2)});
  ddp::DistributedDataParallel ddp(model, world_ptr(), {.bucket_cap_mb = 0.0001, .first_bucket_mb = 0.0001});
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.1));
  const Tensor x = randn({4, 6}, 100 + comm.rank()), y = randn({4, 1}, 200 + comm.rank());
  for (int step = 0; step < 3; ++step) {
    sgd.zero_grad();
    ddp.backward(autograd::mse_loss(ddp(x), y));
    sgd.step();
  }
  REQUIRE(ddp.last_stats().buckets > 1);
  double checksum = 0;
  for (const Tensor& p : model->parameters())
    for (double v : p.to_vector()) checksum = checksum * 1.000001 + v;
  REQUIRE(spread(checksum) == 0.0);  // every rank applied the same averaged gradients

  REQUIRE(threads_in_process() == threads);
}

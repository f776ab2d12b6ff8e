// Catch2 main for the mpi suite: every rank runs the same test cases in the same order (they
// call collectives, so they must), only rank 0 writes the report, and the exit status is
// non-zero if any rank failed anything. Assertions on collective results are made on counts
// already summed over ranks (global_sum), so every rank takes the same branch and none hangs.
#include <catch2/catch.hpp>

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "comm/bootstrap/mpi_runtime.h"
#include "tests/support/catch_session.h"
#include "tests/support/keep_mpi_plugins.h"
#include "tests/support/mpi_test.h"

namespace ringdp::testing {

namespace {
// Released by main before it returns: destroyed at exit instead, it would outlive the CUDA
// runtime (which registers its teardown at first use, after this was made) and tear down its
// streams and NCCL communicator on a runtime that is gone.
std::shared_ptr<comm::Communicator>& holder() {
  static std::shared_ptr<comm::Communicator> communicator;
  return communicator;
}
}  // namespace

std::shared_ptr<comm::Communicator> world_ptr() {
  if (!holder()) holder() = comm::Communicator::init();
  return holder();
}

comm::Communicator& world() { return *world_ptr(); }

int64_t global_sum(int64_t value) {
  // Not MPI_Allreduce: MPICH's blocking calls (ch4:ucx) spin without yielding, and with more ranks
  // than cores a spinning rank starves the one it waits for (the MPICH pass took 3-5 times Open
  // MPI's time, most of it here). Polling with a sleep frees the core.
  int64_t total = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  int done = 0;
  int code = MPI_Iallreduce(&value, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD, &request);
  while (code == MPI_SUCCESS && (code = MPI_Test(&request, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !done)
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  if (code != MPI_SUCCESS) {  // a sum that is not one would hide failures: end the job instead
    std::fprintf(stderr, "ringdp-test: global_sum: MPI error %d\n", code);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return total;
}

}  // namespace ringdp::testing

int main(int argc, char** argv) {
  ringdp::comm::install_terminate_handler("ringdp-test");
  ringdp::testing::keep_mpi_plugins_loaded();
  // RINGDP_TEST_MPI_INIT=single or funneled: this program initialises MPI itself, at that level,
  // before ringdp does (tests/mpi/test_thread_single.cpp), as a user's program may.
  if (const char* level = std::getenv("RINGDP_TEST_MPI_INIT"); level && *level) {
    const bool single = std::strcmp(level, "single") == 0;
    if (!single && std::strcmp(level, "funneled") != 0) {
      std::fprintf(stderr, "RINGDP_TEST_MPI_INIT='%s': expected single or funneled\n", level);
      return 2;
    }
    int provided = 0;
    MPI_Init_thread(&argc, &argv, single ? MPI_THREAD_SINGLE : MPI_THREAD_FUNNELED, &provided);
  }
  auto& world = ringdp::testing::world();
  if (const int rc = ringdp::testing::catch_parse(argc, argv)) return rc;
  if (world.rank() != 0) ringdp::testing::catch_silence_report();
  const int failed = ringdp::testing::catch_run();
  const int64_t ranks_failed = ringdp::testing::global_sum(failed ? 1 : 0);
  if (world.rank() == 0) {
    std::printf("world size %d: %lld rank(s) reported failures\n", world.size(),
                static_cast<long long>(ranks_failed));
  }
  ringdp::testing::holder().reset();
  if (std::getenv("RINGDP_TEST_MPI_INIT")) MPI_Finalize();  // it initialised MPI, so it finalises it
  return ranks_failed ? 1 : 0;
}

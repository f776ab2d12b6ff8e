// The smallest ringdp program: every rank all-reduces (sums) a small tensor with each algorithm
// and prints what it got. In PyTorch terms: dist.init_process_group(), then dist.all_reduce(t).
//   mpirun -np 3 ./hello_allreduce        (MPICH: mpiexec -n 3 ./hello_allreduce)
#include <cstdio>
#include <string>

#include "comm/communicator.h"
#include "tensor/tensor.h"

using namespace ringdp;

int main() {
  // The launcher (mpirun) started and wired the ranks: no MASTER_ADDR, no init_method.
  auto comm = comm::Communicator::init();
  const int rank = comm->rank(), world = comm->size();

  for (comm::Algorithm algorithm : {comm::Algorithm::ring, comm::Algorithm::recursive_doubling,
                                    comm::Algorithm::native, comm::Algorithm::automatic}) {
    // Rank r contributes [r+1, 10(r+1), 100(r+1)], so the sum is easy to check by eye:
    // 3 ranks give [6, 60, 600].
    Tensor t = from_vector({1.0 * (rank + 1), 10.0 * (rank + 1), 100.0 * (rank + 1)}, {3});
    comm->all_reduce(t, ReduceOp::sum, {.algorithm = algorithm});  // blocking, in place

    std::string values;
    for (double v : t.to_vector()) values += " " + std::to_string(static_cast<long long>(v));
    std::printf("rank %d of %d, %s:%s\n", rank, world, comm::algorithm_name(algorithm), values.c_str());
  }
  comm->barrier();  // print-before-exit order does not matter, but every rank finishes together
  return 0;
}

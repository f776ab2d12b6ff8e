// Your own training loop on ringdp, written the way a PyTorch user writes one around
// DistributedDataParallel: your model, your data split, DDP, SGD with momentum, a checkpoint,
// and the loss reported on rank 0. Run: mpirun -np 3 ./custom_training
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "autograd/checkpoint.h"
#include "autograd/functions.h"
#include "autograd/layers.h"
#include "autograd/optim/sgd.h"
#include "comm/communicator.h"
#include "comm/ddp/distributed_data_parallel.h"
#include "comm/ddp/distributed_sampler.h"
#include "tensor/tensor.h"

using namespace ringdp;

// dataset[indices]: the rows of a 2-D tensor, as a new tensor.
Tensor rows(const Tensor& t, const std::vector<int64_t>& indices) {
  const int64_t width = t.size(1);
  const std::vector<double> all = t.to_vector();
  std::vector<double> picked;
  for (int64_t i : indices)
    picked.insert(picked.end(), all.begin() + i * width, all.begin() + (i + 1) * width);
  return from_vector(picked, {static_cast<int64_t>(indices.size()), width});
}

int main() {
  auto comm = comm::Communicator::init();  // dist.init_process_group(); mpirun made the ranks
  const int rank = comm->rank(), world = comm->size();

  // The whole data set, the same on every rank (seeded): y = sum(x) / 4 + 0.5, 8 features.
  const int64_t samples = 240, features = 8;
  Tensor X = randn({samples, features}, /*seed=*/1);
  std::vector<double> targets;
  for (int64_t i = 0; i < samples; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < features; ++j) sum += X.item(i * features + j);
    targets.push_back(sum / 4 + 0.5);
  }
  Tensor Y = from_vector(targets, {samples, 1});

  // nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)); the seeds make every rank's
  // start identical, and DDP broadcasts rank 0's parameters anyway, as PyTorch's does.
  auto model = std::make_shared<autograd::Sequential>();
  model->push_back(std::make_shared<autograd::Linear>(autograd::LinearOptions(features, 16), 11));
  model->push_back(std::make_shared<autograd::ReLU>());
  model->push_back(std::make_shared<autograd::Linear>(autograd::LinearOptions(16, 1), 12));
  ddp::DistributedDataParallel ddp_model(model, comm);  // DDP(model)
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  // DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=0)
  ddp::DistributedSampler sampler(samples, rank, world, /*shuffle=*/true, /*seed=*/0);

  const int epochs = 15;
  const int64_t batch = 16;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    sampler.set_epoch(epoch);  // a different shuffle each epoch, the same on every rank
    const std::vector<int64_t> mine = sampler.indices();
    double loss_sum = 0;
    int steps = 0;
    for (size_t begin = 0; begin < mine.size(); begin += batch) {
      const std::vector<int64_t> idx(mine.begin() + begin,
                                     mine.begin() + std::min(mine.size(), begin + batch));
      optimizer.zero_grad();
      Tensor loss = autograd::mse_loss(ddp_model(rows(X, idx)), rows(Y, idx));
      ddp_model.backward(loss);  // loss.backward(): gradients are averaged over ranks here
      optimizer.step();
      loss_sum += loss.item();
      ++steps;
    }
    // The epoch's loss averaged over ranks, on rank 0: dist.reduce(loss, dst=0, op=AVG).
    Tensor epoch_loss = full({1}, loss_sum / steps, DType::float64);
    comm->reduce(epoch_loss, 0, ReduceOp::avg);
    if (rank == 0) std::printf("epoch %d loss %.6f\n", epoch + 1, epoch_loss.item());
  }

  // torch.save({...}) on rank 0: model and optimizer state, written atomically.
  if (rank == 0) {
    autograd::save_checkpoint("custom_training.ckpt", {.next_epoch = epochs,
                                                       .seed = 0,
                                                       .world_size = static_cast<uint32_t>(world),
                                                       .shuffle = true,
                                                       .model = model->state_dict(),
                                                       .optimizer = optimizer.state_dict()});
    std::printf("saved custom_training.ckpt\n");
  }
  comm->barrier();
  return 0;
}

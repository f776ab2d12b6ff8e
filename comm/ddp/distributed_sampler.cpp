// Implements comm/ddp/distributed_sampler.h (the contract is documented there). Tested by
// tests/mpi/test_ddp.cpp (the invariant depends on it).
#include "comm/ddp/distributed_sampler.h"

#include <numeric>

#include "core/error.h"
#include "tensor/random.h"

namespace ringdp::ddp {

DistributedSampler::DistributedSampler(int64_t dataset_size, int rank, int world_size, bool shuffle,
                                       uint64_t seed, bool pad)
    : dataset_size_(dataset_size),
      rank_(rank),
      world_size_(world_size),
      shuffle_(shuffle),
      seed_(seed),
      pad_(pad) {
  RINGDP_CHECK(dataset_size > 0, "DistributedSampler: the data set is empty");
  RINGDP_CHECK(world_size > 0 && rank >= 0 && rank < world_size, "DistributedSampler: rank ", rank,
               " out of range for ", world_size, " ranks");
}

int64_t DistributedSampler::shard_size() const { return (dataset_size_ + world_size_ - 1) / world_size_; }

std::vector<int64_t> DistributedSampler::global_order() const {
  std::vector<int64_t> order(dataset_size_);
  std::iota(order.begin(), order.end(), 0);
  if (shuffle_) {
    // Fisher-Yates with philox draws: the same permutation on every machine.
    const uint64_t stream = seed_ * 1000003ull + static_cast<uint64_t>(epoch_);
    for (int64_t i = dataset_size_ - 1; i > 0; --i) {
      const auto j = static_cast<int64_t>(random::uniform(stream, static_cast<uint64_t>(i)) *
                                          static_cast<double>(i + 1));
      std::swap(order[i], order[std::min(j, i)]);
    }
  }
  if (!pad_) return order;
  const int64_t total = shard_size() * world_size_;
  for (int64_t i = dataset_size_; i < total; ++i) order.push_back(order[i - dataset_size_]);
  return order;
}

std::vector<int64_t> DistributedSampler::indices() const {
  const std::vector<int64_t> order = global_order();
  std::vector<int64_t> mine;
  mine.reserve(shard_size());
  for (size_t i = rank_; i < order.size(); i += world_size_) mine.push_back(order[i]);
  return mine;
}

}  // namespace ringdp::ddp

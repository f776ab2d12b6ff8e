// DistributedSampler, as PyTorch's: the data set's indices, shuffled per epoch from
// seed + epoch (or in order), padded by repeating from the start to a multiple of the world
// size, and rank r takes positions r, r + N, r + 2N, ... Every rank computes the same
// permutation, so the shards are disjoint (but for padding) and together cover the data set.
// pad = false (ringdp-train --uneven join, with comm/ddp/join.h): no padding, so every sample is
// taken exactly once and the first dataset_size mod N ranks hold one sample more.
#pragma once

#include <cstdint>
#include <vector>

namespace ringdp::ddp {

class DistributedSampler {
 public:
  DistributedSampler(int64_t dataset_size, int rank, int world_size, bool shuffle, uint64_t seed,
                     bool pad = true);
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  /// This rank's indices for the current epoch: ceil(dataset_size / N) of them (padded), or this
  /// rank's share of dataset_size (unpadded: that or one fewer).
  std::vector<int64_t> indices() const;
  /// The whole (padded) permuted list (every rank's shard interleaved).
  std::vector<int64_t> global_order() const;
  /// The largest shard: ceil(dataset_size / N).
  int64_t shard_size() const;

 private:
  int64_t dataset_size_;
  int rank_, world_size_;
  bool shuffle_;
  uint64_t seed_;
  bool pad_;
  int64_t epoch_ = 0;
};

}  // namespace ringdp::ddp

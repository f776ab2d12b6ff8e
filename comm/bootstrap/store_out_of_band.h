// StoreOutOfBand: OutOfBand through a KeyValueStore. Each all_gather is one round: every rank sets
// "<scope>/<round>/<rank>" and reads every other rank's key of that round, so rounds never mix and
// a subset's scope (its parent's scope and its name) keeps two groups apart on one store. A rank
// that never arrives is named when the round's wait passes the timeout (one deadline per round);
// a rank that fails writes its failure as its key (fail()), and its peers raise it at once. Tested by the
// torch suite's jobs under mp.spawn (tests/torch/spawn.py), the torch2 suite's under torchrun, and
// tests/torch/test_launch.sh (a rank that never arrives).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "comm/bootstrap/key_value_store.h"
#include "comm/bootstrap/out_of_band.h"

namespace ringdp::comm {

class StoreOutOfBand final : public OutOfBand {
 public:
  /// Rank `rank` of `size` under `scope` of `store`; every wait lasts at most `timeout`. A
  /// subset's scope adds its name and how many subsets of that name this one made before, so
  /// that the same members may make several, in the same order on each.
  StoreOutOfBand(std::shared_ptr<KeyValueStore> store, std::string scope, int rank, int size,
                 std::chrono::milliseconds timeout);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<std::vector<char>> all_gather(std::span<const char> mine) override;
  std::unique_ptr<OutOfBand> subset(const std::string& name, std::span<const int> members,
                                    std::chrono::milliseconds timeout) override;
  /// Writes this rank's key of the next round as a failure carrying `why`.
  void fail(const std::string& why) override;

 private:
  std::shared_ptr<KeyValueStore> store_;
  std::string scope_;
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  uint64_t round_ = 0;
  std::map<std::string, int> made_;  ///< subsets made, by name
};

}  // namespace ringdp::comm

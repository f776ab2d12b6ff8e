// StoreOutOfBand: OutOfBand through a KeyValueStore. Each all_gather is one round: every rank sets
// "<scope>/<round>/<rank>" and reads every other rank's key of that round, so rounds never mix and
// a subset's scope (its parent's scope and its name) keeps two groups apart on one store. A rank
// that never arrives is named when the round's wait passes the timeout (one deadline per round);
// a rank that fails writes its failure as its key (fail()), and its peers raise it at once. A
// rank's absence may be explained by its caller (`absence`: world sizes that disagree), and only
// an absence: a peer's failure is raised as it is. Tested by the
// torch suite's jobs under mp.spawn (tests/torch/spawn.py), the torch2 suite's under torchrun, and
// tests/torch/test_launch.sh (a rank that never arrives).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "comm/bootstrap/key_value_store.h"
#include "comm/bootstrap/out_of_band.h"

namespace ringdp::comm {

class StoreOutOfBand final : public OutOfBand {
 public:
  /// Why rank r may never have arrived, read from the store once a wait for r passed the timeout;
  /// "" when nothing is known. Its errors (a store gone by then) leave the timeout's own message.
  using Absence = std::function<std::string(KeyValueStore& store, int rank)>;

  /// Rank `rank` of `size` under `scope` of `store`; every wait lasts at most `timeout`. A
  /// subset's scope adds its name and how many subsets of that name this one made before, so
  /// that the same members may make several, in the same order on each. Subsets explain no
  /// absence.
  StoreOutOfBand(std::shared_ptr<KeyValueStore> store, std::string scope, int rank, int size,
                 std::chrono::milliseconds timeout, Absence absence = {});

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<std::vector<char>> all_gather(std::span<const char> mine) override;
  std::unique_ptr<OutOfBand> subset(const std::string& name, std::span<const int> members,
                                    std::chrono::milliseconds timeout) override;
  /// Writes this rank's key of the next round as a failure carrying `why`.
  void fail(const std::string& why) override;

 private:
  std::string explain_absence(int rank) const;

  std::shared_ptr<KeyValueStore> store_;
  std::string scope_;
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  uint64_t round_ = 0;
  std::map<std::string, int> made_;  ///< subsets made, by name
  Absence absence_;
};

}  // namespace ringdp::comm

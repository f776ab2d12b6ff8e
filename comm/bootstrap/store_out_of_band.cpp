// Implements comm/bootstrap/store_out_of_band.h (the contract is documented there).
#include "comm/bootstrap/store_out_of_band.h"

#include <algorithm>
#include <cstddef>
#include <string_view>

#include "core/error.h"

namespace ringdp::comm {

StoreOutOfBand::StoreOutOfBand(std::shared_ptr<KeyValueStore> store, std::string scope, int rank, int size,
                               std::chrono::milliseconds timeout, Absence absence)
    : store_(std::move(store)),
      scope_(std::move(scope)),
      rank_(rank),
      size_(size),
      timeout_(timeout),
      absence_(std::move(absence)) {
  RINGDP_CHECK(size_ >= 1 && rank_ >= 0 && rank_ < size_, "store bootstrap: rank ", rank_, " of ", size_,
               " (expected 0 <= rank < world_size)");
}

namespace {

// A failed rank's key starts with this, which no introduction or UCX address does (both start
// with binary fields, never this text).
constexpr std::string_view kFailed = "\x7fringdp: failed: ";

}  // namespace

std::vector<std::vector<char>> StoreOutOfBand::all_gather(std::span<const char> mine) {
  const std::string round = scope_ + "/" + std::to_string(round_++) + "/";
  store_->set(round + std::to_string(rank_), std::vector<char>(mine.begin(), mine.end()));
  std::vector<std::vector<char>> all(static_cast<size_t>(size_));
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) {
      all[static_cast<size_t>(r)].assign(mine.begin(), mine.end());
      continue;
    }
    try {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      all[static_cast<size_t>(r)] =
          store_->get(round + std::to_string(r), std::max(left, std::chrono::milliseconds(1)));
    } catch (const Error& e) {
      const std::string why = explain_absence(r);
      if (!why.empty()) RINGDP_FAIL(why);
      RINGDP_FAIL(
          "rank ", rank_, " of ", size_, ": rank ", r, " never joined the store bootstrap (", scope_,
          ") within ", timeout_.count() / 1000.0,
          " s: a rank that did not start, a world_size larger than the ranks launched, or another job "
          "on the same store (the same MASTER_ADDR:MASTER_PORT or init_method file) (",
          e.what(), ")");
    }
    const auto& got = all[static_cast<size_t>(r)];
    if (std::string_view(got.data(), got.size()).starts_with(kFailed))
      RINGDP_FAIL("rank ", rank_, " of ", size_, ": rank ", r, " could not join (", scope_,
                  "): ", std::string(got.begin() + static_cast<std::ptrdiff_t>(kFailed.size()), got.end()));
  }
  return all;
}

std::string StoreOutOfBand::explain_absence(int rank) const {
  if (!absence_) return {};
  try {
    return absence_(*store_, rank);
  } catch (const Error&) {  // the store is gone too: the timeout says what is known
    return {};
  }
}

void StoreOutOfBand::fail(const std::string& why) {
  std::string text(kFailed);
  text += why;
  try {
    store_->set(scope_ + "/" + std::to_string(round_) + "/" + std::to_string(rank_),
                std::vector<char>(text.begin(), text.end()));
  } catch (const Error&) {  // the store itself is gone: the peers' timeout is all that is left
  }
}

std::unique_ptr<OutOfBand> StoreOutOfBand::subset(const std::string& name, std::span<const int> members,
                                                  std::chrono::milliseconds timeout) {
  const auto at = std::find(members.begin(), members.end(), rank_);
  RINGDP_CHECK(at != members.end(), "store bootstrap: rank ", rank_, " is not among the members of ", name);
  const std::string scope = scope_ + "/" + name + "#" + std::to_string(++made_[name]);
  return std::make_unique<StoreOutOfBand>(store_, scope, static_cast<int>(at - members.begin()),
                                          static_cast<int>(members.size()), timeout);
}

}  // namespace ringdp::comm

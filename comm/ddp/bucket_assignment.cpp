// Implements comm/ddp/bucket_assignment.h (the contract is documented there). Tested by
// tests/unit/test_bucket_assignment.cpp.
#include "comm/ddp/bucket_assignment.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace ringdp::ddp {

namespace {

// One (dtype, device) group's open bucket and how many of its buckets were closed: the count picks
// the cap, as PyTorch's per-key iterator over the size limits does.
struct OpenBucket {
  std::vector<int> members;
  double bytes = 0;
  int closed = 0;
};

using GroupKey = std::tuple<int, int, int>;  // dtype, device type, device index

GroupKey group_of(const BucketParameter& p) {
  return {static_cast<int>(p.dtype), static_cast<int>(p.device.kind), p.device.index};
}

}  // namespace

std::vector<std::vector<int>> assign_buckets(std::span<const BucketParameter> parameters,
                                             double bucket_cap_bytes, double first_bucket_cap_bytes) {
  std::vector<std::vector<int>> buckets;
  std::map<GroupKey, OpenBucket> open;
  for (int i = static_cast<int>(parameters.size()) - 1; i >= 0; --i) {
    OpenBucket& bucket = open[group_of(parameters[i])];
    bucket.members.push_back(i);
    bucket.bytes += static_cast<double>(parameters[i].bytes);
    const double cap = bucket.closed == 0 ? first_bucket_cap_bytes : bucket_cap_bytes;
    if (bucket.bytes >= cap) {
      buckets.push_back(std::move(bucket.members));
      bucket.members.clear();
      bucket.bytes = 0;
      ++bucket.closed;
    }
  }
  for (auto& [key, bucket] : open)
    if (!bucket.members.empty()) buckets.push_back(std::move(bucket.members));
  // Launch order is the order in which each bucket's last gradient is expected: members were
  // appended in that order, so a bucket's last member has the lowest registration index.
  std::stable_sort(buckets.begin(), buckets.end(),
                   [](const std::vector<int>& a, const std::vector<int>& b) { return a.back() > b.back(); });
  return buckets;
}

}  // namespace ringdp::ddp

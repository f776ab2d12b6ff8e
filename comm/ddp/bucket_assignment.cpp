// Implements comm/ddp/bucket_assignment.h (the contract is documented there). Tested by
// tests/unit/test_bucket_assignment.cpp.
#include "comm/ddp/bucket_assignment.h"

namespace ringdp::ddp {

std::vector<std::vector<int>> assign_buckets(std::span<const BucketParameter> parameters,
                                             double bucket_cap_bytes, double first_bucket_cap_bytes) {
  std::vector<std::vector<int>> buckets;
  double used = 0;  // bytes in the last bucket
  for (int i = static_cast<int>(parameters.size()) - 1; i >= 0; --i) {
    const BucketParameter& p = parameters[i];
    bool open_new = buckets.empty();
    if (!open_new) {
      const BucketParameter& previous = parameters[buckets.back().back()];
      const double cap = buckets.size() == 1 ? first_bucket_cap_bytes : bucket_cap_bytes;
      open_new = previous.dtype != p.dtype || !(previous.device == p.device) ||
                 used + static_cast<double>(p.bytes) > cap;
    }
    if (open_new) {
      buckets.emplace_back();
      used = 0;
    }
    buckets.back().push_back(i);
    used += static_cast<double>(p.bytes);
  }
  return buckets;
}

}  // namespace ringdp::ddp

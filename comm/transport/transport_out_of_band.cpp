// Implements comm/transport/transport_out_of_band.h.
#include "comm/transport/transport_out_of_band.h"

#include <algorithm>
#include <cstdint>

namespace ringdp::comm {

std::vector<std::vector<char>> TransportOutOfBand::all_gather(std::span<const char> mine) {
  const int size = transport_.size();
  std::vector<int64_t> lengths(static_cast<size_t>(size));
  const int64_t length = static_cast<int64_t>(mine.size());
  transport_.native_all_gather(&length, lengths.data(), 1, DType::int64);
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::vector<char> padded(static_cast<size_t>(longest), 0), all(static_cast<size_t>(longest * size));
  std::copy(mine.begin(), mine.end(), padded.begin());
  transport_.native_all_gather(padded.data(), all.data(), longest, DType::uint8);
  std::vector<std::vector<char>> blobs;
  for (int r = 0; r < size; ++r) {
    const char* at = all.data() + r * longest;
    blobs.emplace_back(at, at + lengths[static_cast<size_t>(r)]);
  }
  return blobs;
}

}  // namespace ringdp::comm

// FNV-1a, 64 bits: a cheap hash for comparing small descriptions across ranks (equal text, equal
// hash; a difference is then named from the texts themselves, so a collision only hides it).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace ringdp {

inline uint64_t fnv1a(std::string_view bytes, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

/// The same over 64-bit words, each taken as its 8 bytes from the lowest: the same value on every
/// rank whatever the host's byte order.
inline uint64_t fnv1a_words(std::span<const int64_t> words, uint64_t hash = 1469598103934665603ull) {
  for (int64_t w : words)
    for (int byte = 0; byte < 8; ++byte)
      hash = (hash ^ (static_cast<uint64_t>(w) >> (8 * byte) & 0xff)) * 1099511628211ull;
  return hash;
}

}  // namespace ringdp

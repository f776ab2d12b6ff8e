// FNV-1a, 64 bits: a cheap hash for comparing small descriptions across ranks (equal text, equal
// hash; a difference is then named from the texts themselves, so a collision only hides it).
#pragma once

#include <cstdint>
#include <string_view>

namespace ringdp {

inline uint64_t fnv1a(std::string_view bytes, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

}  // namespace ringdp

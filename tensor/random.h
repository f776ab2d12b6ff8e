// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11): element i of a draw
// depends only on (seed, i), so every machine and standard library produces the same values,
// and any slice of a tensor can be regenerated on its own.
//   uniform(seed, i): 53 random bits from lanes 0-1 of philox(counter = i, key = seed), in [0, 1)
//   normal(seed, i):  Box-Muller, sqrt(-2 ln(1 - u1)) · cos(2π u2), u1 from lanes 0-1, u2 from 2-3
#pragma once

#include <array>
#include <cstdint>

namespace ringdp::random {

std::array<uint32_t, 4> philox4x32(uint64_t counter, uint64_t key);
double uniform(uint64_t seed, uint64_t index);
double normal(uint64_t seed, uint64_t index);

}  // namespace ringdp::random

// ringdp::float16 against IEEE binary16's definition: every half survives a round trip through
// float32, every midpoint between neighbours rounds to the even one, overflow and NaN behave.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/dtype.h"

using ringdp::float16;

namespace {
float value_of(uint16_t bits) {
  float16 h;
  h.bits = bits;
  return static_cast<float>(h);
}
}  // namespace

TEST_CASE("float16: known values decode as IEEE binary16 defines them", "[dtype][float16]") {
  CHECK(value_of(0x3c00) == 1.0f);
  CHECK(value_of(0xc000) == -2.0f);
  CHECK(value_of(0x7bff) == 65504.0f);
  CHECK(value_of(0x0001) == std::ldexp(1.0f, -24));  // the smallest subnormal
  CHECK(value_of(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(value_of(0x0400) == std::ldexp(1.0f, -14));  // the smallest normal
  CHECK(std::isinf(value_of(0x7c00)));
  CHECK(std::isnan(value_of(0x7e00)));
  CHECK(std::signbit(value_of(0x8000)));
}

TEST_CASE("float16: every half survives float32 and back", "[dtype][float16]") {
  int64_t wrong = 0;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float v = value_of(static_cast<uint16_t>(bits));
    const uint16_t back = float16::round_from_float(v);
    if (std::isnan(v)) {
      wrong += !std::isnan(value_of(back));  // a NaN stays a NaN (payloads may quieten)
    } else {
      wrong += back != bits;
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("float16: midpoints round to the even neighbour, others to the nearest", "[dtype][float16]") {
  int64_t wrong = 0;
  // Each positive finite half and the next: their midpoint is exact in float32 (13 more bits).
  for (uint32_t bits = 0; bits < 0x7bff; ++bits) {
    const float low = value_of(static_cast<uint16_t>(bits)), high = value_of(static_cast<uint16_t>(bits + 1));
    const float mid = low + (high - low) / 2;
    const uint16_t even = (bits & 1) == 0 ? static_cast<uint16_t>(bits) : static_cast<uint16_t>(bits + 1);
    wrong += float16::round_from_float(mid) != even;
    wrong += float16::round_from_float(std::nextafter(mid, 0.0f)) != bits;
    wrong += float16::round_from_float(std::nextafter(mid, 1e9f)) != bits + 1;
    wrong += float16::round_from_float(-mid) != (even | 0x8000u);
  }
  CHECK(wrong == 0);
}

TEST_CASE("float16: overflow gives infinity at 65520, tiny values round to zero or the least subnormal",
          "[dtype][float16]") {
  CHECK(float16::round_from_float(65519.99f) == 0x7bff);
  CHECK(float16::round_from_float(65520.0f) == 0x7c00);
  CHECK(float16::round_from_float(-1e30f) == 0xfc00);
  CHECK(float16::round_from_float(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(float16::round_from_float(std::ldexp(1.0f, -25)) == 0x0000);  // ties to even: zero
  CHECK(float16::round_from_float(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(float16::round_from_float(std::ldexp(3.0f, -25)) == 0x0002);  // 1.5 units: ties to even, 2
  CHECK(float16::round_from_float(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(std::isnan(value_of(float16::round_from_float(std::numeric_limits<float>::quiet_NaN()))));
}

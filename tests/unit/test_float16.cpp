// ringdp::float16 against IEEE binary16's definition: every half survives a round trip through
// float32, every midpoint between neighbours rounds to the even one, overflow and NaN behave; the
// bulk conversions (core/float16_bulk.h) give the same bits.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "core/float16_bulk.h"

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

namespace {
uint32_t bits_of(float v) {
  uint32_t word;
  std::memcpy(&word, &v, sizeof word);
  return word;
}
}  // namespace

// The bulk conversions run on the CPU's F16C instructions where it has them: they must give the
// per-element conversions' bits for every input, tails and odd lengths included.
TEST_CASE("float16 bulk: every half converts to the per-element conversion's bits", "[dtype][float16]") {
  INFO("bulk path: " << ringdp::float16_bulk_path());
  std::vector<float16> halves(0x10000);
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) halves[bits].bits = static_cast<uint16_t>(bits);
  std::vector<float> wide(halves.size());
  int64_t wrong = 0;
  for (int64_t start : {0, 1, 5}) {  // unaligned starts and lengths that leave a tail
    const int64_t n = static_cast<int64_t>(halves.size()) - start - (start == 0 ? 0 : 3);
    ringdp::float16_to_float(halves.data() + start, wide.data(), n);
    for (int64_t i = 0; i < n; ++i)
      wrong += bits_of(wide[i]) != bits_of(static_cast<float>(halves[start + i]));
  }
  CHECK(wrong == 0);
}

TEST_CASE("float16 bulk: float32 rounds to the per-element conversion's bits", "[dtype][float16]") {
  INFO("bulk path: " << ringdp::float16_bulk_path());
  // Every sign, exponent and kept-mantissa pattern (the top 19 bits), each with the dropped 13 bits
  // below, at and above the midpoint, zero and all ones: every rounding case, overflow, the
  // subnormal range, infinities and NaNs.
  const uint32_t low_patterns[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x0b57};
  std::vector<float> values;
  values.reserve((1u << 19) * std::size(low_patterns));
  for (uint32_t top = 0; top < (1u << 19); ++top) {
    for (uint32_t low : low_patterns) {
      const uint32_t word = (top << 13) | low;
      float v;
      std::memcpy(&v, &word, sizeof v);
      values.push_back(v);
    }
  }
  std::vector<float16> bulk(values.size());
  int64_t wrong = 0;
  for (int64_t tail : {0, 7}) {
    const auto n = static_cast<int64_t>(values.size()) - tail;
    ringdp::float16_from_float(values.data() + tail, bulk.data(), n);
    for (int64_t i = 0; i < n; ++i) wrong += bulk[i].bits != float16::round_from_float(values[tail + i]);
  }
  CHECK(wrong == 0);
}

TEST_CASE("float16 bulk: short arrays, every length up to two blocks", "[dtype][float16]") {
  for (int64_t n = 0; n <= 17; ++n) {
    std::vector<float> in(static_cast<size_t>(n) + 1, -7.0f), back(static_cast<size_t>(n) + 1, -7.0f);
    for (int64_t i = 0; i < n; ++i) in[i] = 0.1f * static_cast<float>(i) - 0.5f;
    std::vector<float16> half(static_cast<size_t>(n) + 1, float16(99.0f));
    ringdp::float16_from_float(in.data(), half.data(), n);
    ringdp::float16_to_float(half.data(), back.data(), n);
    for (int64_t i = 0; i < n; ++i) CHECK(back[i] == static_cast<float>(float16(in[i])));
    CHECK(static_cast<float>(half[n]) == 99.0f);  // nothing written past n
    CHECK(back[n] == -7.0f);
  }
}

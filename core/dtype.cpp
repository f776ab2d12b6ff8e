// Implements core/dtype.h (the contract is documented there). Tested by tests/unit/test_tensor.cpp.
#include "core/dtype.h"

#include <cmath>

namespace ringdp {

DType parse_dtype(std::string_view name) {
  if (name == "float32" || name == "float" || name == "f32") return DType::float32;
  if (name == "float64" || name == "double" || name == "f64") return DType::float64;
  if (name == "int32" || name == "int" || name == "i32") return DType::int32;
  if (name == "int64" || name == "i64") return DType::int64;
  if (name == "bfloat16" || name == "bf16") return DType::bfloat16;
  if (name == "float16" || name == "half" || name == "f16") return DType::float16;
  if (name == "int8" || name == "i8") return DType::int8;
  if (name == "uint8" || name == "u8") return DType::uint8;
  if (name == "bool") return DType::boolean;
  RINGDP_FAIL("unknown dtype '", name,
              "'; expected float32, float64, int32, int64, bfloat16, float16, int8, uint8 or bool");
}

float16::operator float() const {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa · 2^-24, exact in float32.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  uint32_t word = sign | (mantissa << 13);
  word |= exponent == 0x1fu ? 0x7f800000u : (exponent - 15 + 127) << 23;
  // A NaN comes out quiet, as the CPU's own conversion (core/float16_bulk.h) gives it.
  if (exponent == 0x1fu && mantissa != 0) word |= 0x00400000u;
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

uint16_t float16::round_from_float(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof word);
  const auto sign = static_cast<uint16_t>((word >> 16) & 0x8000u);
  const uint32_t magnitude = word & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // infinity, or NaN kept quiet with the top of its payload
    return sign | (magnitude == 0x7f800000u ? 0x7c00u : 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  // 65520 is halfway between binary16's largest finite value (65504) and 2^16: ties to even
  // round it, and everything above, to infinity.
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;
  if (magnitude < 0x38800000u) {
    // Below 2^-14 the result is subnormal: count units of 2^-24 (scaling by a power of two is
    // exact) and round that count to nearest even; 1024 units carry into the smallest normal.
    float abs_value;
    std::memcpy(&abs_value, &magnitude, sizeof abs_value);
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(abs_value, 24)));
  }
  uint32_t half = ((((magnitude >> 23) - 127 + 15) << 10) | ((magnitude >> 13) & 0x3ffu));
  const uint32_t dropped = magnitude & 0x1fffu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u) != 0)) ++half;  // a carry is still exact
  return sign | static_cast<uint16_t>(half);
}

}  // namespace ringdp

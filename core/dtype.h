// Element types ringdp moves and computes on, and the bfloat16 storage type.
// bfloat16 is the top half of an IEEE float32; conversions round to nearest even, so
// integers up to 256 are exact (the collectives' tests rely on that).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/error.h"

namespace ringdp {

enum class DType : uint8_t { float32, float64, int32, int64, bfloat16 };

/// A stream handle for the kernels' CUDA variants (cudaStream_t underneath); ignored on CPU.
using Stream = void*;

struct bfloat16 {
  uint16_t bits = 0;

  bfloat16() = default;
  explicit bfloat16(float value) : bits(round_from_float(value)) {}
  explicit operator float() const {
    uint32_t word = static_cast<uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &word, sizeof value);
    return value;
  }

  static uint16_t round_from_float(float value) {
    uint32_t word;
    std::memcpy(&word, &value, sizeof word);
    if ((word & 0x7f800000u) == 0x7f800000u && (word & 0x007fffffu) != 0) {
      return static_cast<uint16_t>((word >> 16) | 0x0040u);  // keep NaN a (quiet) NaN
    }
    // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit, then truncate.
    uint32_t lsb = (word >> 16) & 1u;
    word += 0x7fffu + lsb;
    return static_cast<uint16_t>(word >> 16);
  }
};

inline bool operator==(bfloat16 a, bfloat16 b) { return a.bits == b.bits; }

inline size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::float32: return 4;
    case DType::float64: return 8;
    case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::bfloat16: return 2;
  }
  return 0;
}

inline const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::bfloat16: return "bfloat16";
  }
  return "unknown";
}

inline bool is_floating(DType dtype) {
  return dtype == DType::float32 || dtype == DType::float64 || dtype == DType::bfloat16;
}

/// Parses "float32"/"float"/"f32", "float64"/"double", "int32"/"int", "int64", "bfloat16"/"bf16".
DType parse_dtype(std::string_view name);

template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::float32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::float64;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::int32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::int64;
};
template <>
struct DTypeOf<bfloat16> {
  static constexpr DType value = DType::bfloat16;
};

template <typename T>
struct TypeTag {
  using type = T;
};

/// Calls fn(TypeTag<T>{}) with T the C++ type of dtype.
template <typename Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::float32: return fn(TypeTag<float>{});
    case DType::float64: return fn(TypeTag<double>{});
    case DType::int32: return fn(TypeTag<int32_t>{});
    case DType::int64: return fn(TypeTag<int64_t>{});
    case DType::bfloat16: return fn(TypeTag<bfloat16>{});
  }
  RINGDP_FAIL("unknown dtype code ", static_cast<int>(dtype));
}

/// Like dispatch_dtype, for operations defined on float32 and float64 only.
template <typename Fn>
decltype(auto) dispatch_float(DType dtype, const char* op, Fn&& fn) {
  switch (dtype) {
    case DType::float32: return fn(TypeTag<float>{});
    case DType::float64: return fn(TypeTag<double>{});
    default: break;
  }
  RINGDP_FAIL(op, " supports float32 and float64, got ", dtype_name(dtype));
}

}  // namespace ringdp

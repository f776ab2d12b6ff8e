// Element types ringdp moves and computes on, and the storage types C++ lacks: bfloat16 (the top
// half of an IEEE float32), float16 (IEEE binary16) and boolean (one byte, 0 or 1).
// The 16-bit floats are computed in float32 and rounded to nearest even, so integers up to 256
// (bfloat16) and 2048 (float16) are exact (the collectives' tests rely on that). A boolean reads
// any nonzero byte as true, so a corrupt byte is a wrong value, never undefined behaviour.
// New dtypes go at the end: a dtype's code is stored in checkpoints and travels in MPI tags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/error.h"

namespace ringdp {

enum class DType : uint8_t { float32, float64, int32, int64, bfloat16, float16, int8, uint8, boolean };

/// The last DType: codes above it are not dtypes (checkpoints, tags and the bindings check).
constexpr DType kLastDType = DType::boolean;

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

struct float16 {
  uint16_t bits = 0;

  float16() = default;
  explicit float16(float value) : bits(round_from_float(value)) {}
  /// Exact; a NaN comes out a quiet NaN with the same sign and the top of its payload.
  explicit operator float() const;

  /// Round to nearest, ties to even; overflow gives ±infinity, NaN stays a quiet NaN.
  static uint16_t round_from_float(float value);
};

inline bool operator==(float16 a, float16 b) { return a.bits == b.bits; }

struct boolean {
  uint8_t bits = 0;

  boolean() = default;
  explicit boolean(float value) : bits(value != 0.0f) {}
  explicit operator float() const { return bits != 0 ? 1.0f : 0.0f; }
};

inline bool operator==(boolean a, boolean b) { return (a.bits != 0) == (b.bits != 0); }

/// The storage types above convert through float; the rest are C++ arithmetic types.
template <typename T>
constexpr bool is_float_stored_v =
    std::is_same_v<T, bfloat16> || std::is_same_v<T, float16> || std::is_same_v<T, boolean>;

/// v converted to T, through float for the storage types (static_cast alone cannot reach them).
/// A floating value goes to an integer narrower than 64 bits through int64, so one out of the
/// narrow type's range wraps (as an integer-to-integer conversion does, and the CUDA twin) instead
/// of being undefined; bool is v != 0 for every source, compared in the source's own precision.
template <typename T, typename S>
T convert_value(S v) {
  if constexpr (std::is_same_v<T, S>) {
    return v;
  } else if constexpr (std::is_same_v<T, boolean>) {
    boolean b;
    if constexpr (is_float_stored_v<S>)
      b.bits = static_cast<float>(v) != 0.0f;
    else
      b.bits = v != 0;
    return b;
  } else if constexpr (is_float_stored_v<S>) {
    return convert_value<T>(static_cast<float>(v));
  } else if constexpr (is_float_stored_v<T>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<T> && sizeof(T) < 8 && std::is_floating_point_v<S>) {
    return static_cast<T>(static_cast<int64_t>(v));
  } else {
    return static_cast<T>(v);
  }
}

inline size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::float32: return 4;
    case DType::float64: return 8;
    case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::bfloat16: return 2;
    case DType::float16: return 2;
    case DType::int8: return 1;
    case DType::uint8: return 1;
    case DType::boolean: return 1;
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
    case DType::float16: return "float16";
    case DType::int8: return "int8";
    case DType::uint8: return "uint8";
    case DType::boolean: return "bool";
  }
  return "unknown";
}

inline bool is_floating(DType dtype) {
  return dtype == DType::float32 || dtype == DType::float64 || dtype == DType::bfloat16 ||
         dtype == DType::float16;
}

/// Whether a dtype code (from a file, a tag, another library) names a DType.
inline bool is_dtype_code(int code) { return code >= 0 && code <= static_cast<int>(kLastDType); }

/// Parses "float32"/"float"/"f32", "float64"/"double", "int32"/"int", "int64", "bfloat16"/"bf16",
/// "float16"/"half"/"f16", "int8", "uint8", "bool".
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
template <>
struct DTypeOf<float16> {
  static constexpr DType value = DType::float16;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::int8;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::uint8;
};
template <>
struct DTypeOf<boolean> {
  static constexpr DType value = DType::boolean;
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
    case DType::float16: return fn(TypeTag<float16>{});
    case DType::int8: return fn(TypeTag<int8_t>{});
    case DType::uint8: return fn(TypeTag<uint8_t>{});
    case DType::boolean: return fn(TypeTag<boolean>{});
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

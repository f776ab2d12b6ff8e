// Implements core/float16_bulk.h (the contract is documented there). Tested by
// tests/unit/test_float16.cpp.
#include "core/float16_bulk.h"

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define RINGDP_F16C_PATH 1
#endif

namespace ringdp {
namespace {

void to_float_scalar(const float16* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

void from_float_scalar(const float* in, float16* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = float16(in[i]);
}

#ifdef RINGDP_F16C_PATH
// The target attribute compiles only these two for F16C, so the rest of the binary still runs on
// any x86-64; they are called only after the CPU says it has the instructions. The tail goes
// through a padded block so that every element takes the same instruction.
__attribute__((target("avx,f16c"))) void to_float_f16c(const float16* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(half));
  }
  if (i < n) {
    uint16_t half[8] = {};
    float wide[8];
    std::memcpy(half, in + i, static_cast<size_t>(n - i) * sizeof(uint16_t));
    _mm256_storeu_ps(wide, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(half))));
    std::memcpy(out + i, wide, static_cast<size_t>(n - i) * sizeof(float));
  }
}

__attribute__((target("avx,f16c"))) void from_float_f16c(const float* in, float16* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), half);
  }
  if (i < n) {
    float wide[8] = {};
    uint16_t half[8];
    std::memcpy(wide, in + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(half),
                     _mm256_cvtps_ph(_mm256_loadu_ps(wide), _MM_FROUND_TO_NEAREST_INT));
    std::memcpy(out + i, half, static_cast<size_t>(n - i) * sizeof(uint16_t));
  }
}

// CPUID leaf 1 (ECX: F16C bit 29, AVX bit 28, OSXSAVE bit 27) and the OS saving the YMM
// registers (XCR0 bits 1 and 2), read directly: clang's __builtin_cpu_supports knows no "f16c".
bool cpu_has_f16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    const unsigned needed = (1u << 29) | (1u << 28) | (1u << 27);
    if ((ecx & needed) != needed) return false;
    unsigned xcr0_low = 0, xcr0_high = 0;
    __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    return (xcr0_low & 0x6u) == 0x6u;
  }();
  return has;
}
#endif

}  // namespace

void float16_to_float(const float16* in, float* out, int64_t n) {
#ifdef RINGDP_F16C_PATH
  if (cpu_has_f16c()) return to_float_f16c(in, out, n);
#endif
  to_float_scalar(in, out, n);
}

void float16_from_float(const float* in, float16* out, int64_t n) {
#ifdef RINGDP_F16C_PATH
  if (cpu_has_f16c()) return from_float_f16c(in, out, n);
#endif
  from_float_scalar(in, out, n);
}

const char* float16_bulk_path() {
#ifdef RINGDP_F16C_PATH
  if (cpu_has_f16c()) return "f16c";
#endif
  return "scalar";
}

}  // namespace ringdp

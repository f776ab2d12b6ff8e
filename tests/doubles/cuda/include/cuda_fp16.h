// Emulator stand-in for cuda_fp16.h: IEEE binary16 storage with round-to-nearest-even
// conversion (ringdp::float16's, which tests/unit checks bit for bit).
#pragma once

#include "core/dtype.h"

struct __half {
  unsigned short x;
};
inline float __half2float(__half v) {
  ringdp::float16 h;
  h.bits = v.x;
  return static_cast<float>(h);
}
inline __half __float2half_rn(float f) { return __half{ringdp::float16::round_from_float(f)}; }

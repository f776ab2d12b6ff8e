// Emulator stand-in for cuda_bf16.h: bfloat16 storage with round-to-nearest-even conversion.
#pragma once

#include "core/dtype.h"

struct __nv_bfloat16 {
  unsigned short x;
};
inline float __bfloat162float(__nv_bfloat16 v) {
  ringdp::bfloat16 b;
  b.bits = v.x;
  return static_cast<float>(b);
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  return __nv_bfloat16{ringdp::bfloat16::round_from_float(f)};
}

// Arrays converted between float32 and float16 at memory speed. The per-element conversions in
// core/dtype.h are exact but branchy and out of line: measured on 2.1 M gradients, a cast took
// 22–32 ms and made the fp16 communication hook 6–7× slower than no hook (docs/benchmarks.md).
// x86-64 CPUs since 2012 convert eight values per instruction (F16C); where the CPU has it these
// use it, chosen once at run time, else they loop over the per-element conversions. Both paths
// give the same bits for every input: the unit test compares them over every half and every
// float32 rounding case.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ringdp {

/// out[i] = float(in[i]), exact; n >= 0; in and out must not overlap.
void float16_to_float(const float16* in, float* out, int64_t n);

/// out[i] = float16(in[i]), rounded to nearest even as float16::round_from_float does.
void float16_from_float(const float* in, float16* out, int64_t n);

/// "f16c" where the two run on the CPU's conversion instructions, "scalar" otherwise.
const char* float16_bulk_path();

}  // namespace ringdp

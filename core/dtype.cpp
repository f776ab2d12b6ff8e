// Implements core/dtype.h (the contract is documented there). Tested by tests/unit/test_tensor.cpp.
#include "core/dtype.h"

namespace ringdp {

DType parse_dtype(std::string_view name) {
  if (name == "float32" || name == "float" || name == "f32") return DType::float32;
  if (name == "float64" || name == "double" || name == "f64") return DType::float64;
  if (name == "int32" || name == "int" || name == "i32") return DType::int32;
  if (name == "int64" || name == "i64") return DType::int64;
  if (name == "bfloat16" || name == "bf16") return DType::bfloat16;
  RINGDP_FAIL("unknown dtype '", name, "'; expected float32, float64, int32, int64 or bfloat16");
}

}  // namespace ringdp

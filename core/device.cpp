// Implements core/device.h (the contract is documented there). Tested by tests/unit/test_tensor.cpp.
#include "core/device.h"

#include <charconv>

#include "core/error.h"

namespace ringdp {

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.starts_with("cuda:")) {
    int index = -1;
    const auto digits = text.substr(5);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && end == digits.data() + digits.size() && index >= 0) return cuda(index);
  }
  RINGDP_FAIL("unknown device '", text, "'; expected cpu, cuda or cuda:N");
}

std::string Device::str() const { return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index); }

}  // namespace ringdp

// Implements core/error.h (the contract is documented there). Tested by every REQUIRE_THROWS_WITH in the
// suites.
#include "core/error.h"

#include <cstring>

namespace ringdp::detail {

[[noreturn]] void throw_check_failure(const char* file, int line, const char* condition,
                                      const std::string& message) {
  // Paths are printed relative to the repository so messages are stable across checkouts.
  const char* shown = file;
  for (const char* dir : {"kernels/", "tensor/", "autograd/", "comm/", "apps/", "tests/"}) {
    if (const char* at = std::strstr(file, dir)) {
      shown = at;
      break;
    }
  }
  std::ostringstream out;
  out << message << " [";
  if (condition) out << "check `" << condition << "` failed at ";
  out << shown << ":" << line << "]";
  throw Error(out.str());
}

}  // namespace ringdp::detail

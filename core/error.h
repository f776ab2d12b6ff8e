// ringdp::Error and RINGDP_CHECK: the one error type every layer throws.
// A failed check names the condition, file:line and the values the caller passed in,
// so a test can match a substring of the message (REQUIRE_THROWS_WITH).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ringdp {

/// Every recoverable error in ringdp: bad input, unsupported dtype or device, I/O problems.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

[[noreturn]] void throw_check_failure(const char* file, int line, const char* condition,
                                      const std::string& message);

}  // namespace detail
}  // namespace ringdp

/// Throws ringdp::Error("<message> [check `cond` failed at file:line]") when cond is false.
/// The message is built in a lambda of its own, out of line and marked cold: built in place, its
/// string stream made every function with a check save registers and grow its frame on every
/// call, failing or not, and checked functions lie on every collective's path (docs/benchmarks.md).
// clang-format off
#define RINGDP_CHECK(cond, ...)                                                           \
  do {                                                                                    \
    if (__builtin_expect(!(cond), 0)) {                                                   \
      [&]() __attribute__((noinline, cold, noreturn)) {                                   \
        ::ringdp::detail::throw_check_failure(__FILE__, __LINE__, #cond,                  \
                                              ::ringdp::detail::concat(__VA_ARGS__));     \
      }();                                                                                \
    }                                                                                     \
  } while (0)
// clang-format on

/// Throws ringdp::Error unconditionally, with the same location suffix as RINGDP_CHECK.
#define RINGDP_FAIL(...) \
  ::ringdp::detail::throw_check_failure(__FILE__, __LINE__, nullptr, ::ringdp::detail::concat(__VA_ARGS__))

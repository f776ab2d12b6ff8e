// Comparison helpers shared by the tests: tolerance checks that report the first mismatches
// (and fail), in the spirit of llm.c's validate_result.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace ringdp::testing {

/// Counts elements where |got − want| > atol + rtol·|want|; prints the first five.
inline int64_t count_mismatches(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                                double atol, const std::string& label) {
  REQUIRE(got.size() == want.size());
  int64_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tolerance = atol + rtol * std::fabs(want[i]);
    if (!(std::fabs(got[i] - want[i]) <= tolerance)) {
      if (wrong < 5) {
        UNSCOPED_INFO(label << ": element " << i << " got " << got[i] << ", want " << want[i]);
      }
      ++wrong;
    }
  }
  return wrong;
}

}  // namespace ringdp::testing

#define RINGDP_REQUIRE_CLOSE(got, want, rtol, atol) \
  REQUIRE(::ringdp::testing::count_mismatches((got), (want), (rtol), (atol), #got) == 0)

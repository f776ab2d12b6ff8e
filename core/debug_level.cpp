// Implements core/debug_level.h.
#include "core/debug_level.h"

#include <string>

#include "core/error.h"
#include "core/settings.h"

namespace ringdp {

std::optional<DebugLevel> parse_debug_level(std::string_view word) {
  if (word == "OFF") return DebugLevel::off;
  if (word == "INFO") return DebugLevel::info;
  if (word == "DETAIL") return DebugLevel::detail;
  return std::nullopt;
}

DebugLevel debug_level() {
  static const DebugLevel level = [] {
    // The settings table has checked the word against OFF|INFO|DETAIL already.
    const std::string word = settings::text(settings::Id::debug).value_or("OFF");
    const std::optional<DebugLevel> parsed = parse_debug_level(word);
    RINGDP_CHECK(parsed.has_value(), "RINGDP_DEBUG='", word, "': expected OFF, INFO or DETAIL");
    return *parsed;
  }();
  return level;
}

}  // namespace ringdp

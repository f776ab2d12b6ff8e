// RINGDP_DEBUG as one typed level, read once per process (as c10d's DebugLevel): OFF; INFO, which
// says at start-up what ringdp chose (the CUDA transport, NCCL's version); DETAIL, which also
// compares every collective's arguments across ranks before it runs (comm/algorithms/fingerprint.h). The
// words are the ones users set; a bad one is refused by the settings table (core/settings.h).
// Tested by tests/unit/test_settings.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ringdp {

enum class DebugLevel : uint8_t { off, info, detail };

/// The level a RINGDP_DEBUG value names (OFF, INFO, DETAIL); nullopt for any other word.
std::optional<DebugLevel> parse_debug_level(std::string_view word);

/// RINGDP_DEBUG's level, read at the first call (OFF when unset; a bad value throws, naming it).
DebugLevel debug_level();

}  // namespace ringdp

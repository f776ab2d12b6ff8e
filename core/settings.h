// The RINGDP_* environment variables, each declared once in one table (core/settings.cpp): name,
// kind, default, what is expected, one line of doc. Every reader parses through the functions
// below, so a bad value is an error naming the variable, the value and what was expected, and
// an unknown RINGDP_* variable (a misspelling: RINGDP_TIMEOUTT) is named with the closest known
// one instead of being ignored in silence. `ringdp-bench --help-env` and `ringdp-train
// --help-env` print the table; docs/settings.md holds the same table, and a test compares them.
// Tested by tests/unit/test_settings.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ringdp::settings {

enum class Kind : uint8_t {
  number,  ///< a non-negative integer, within [min, max] and a multiple of multiple_of
  flag,  ///< 0/1 (also false/true, no/yes, off/on)
  choice,  ///< one word of `choices` (separated by '|')
  text,  ///< free text: a path, a plan
};

/// Who reads a variable: the library and its apps, or the test doubles and scripts (listed so
/// that they are documented too and never reported as unknown).
enum class Reader : uint8_t { library, tests };

/// Every variable, in table order.
enum class Id : uint8_t {
  timeout,
  timeout_ms,
  exit_grace,
  segment_bytes,
  rd_max_bytes,
  rabenseifner_max_bytes,
  shm_max_bytes,
  shm_scatter_min_bytes,
  shm_slot_bytes,
  chain_min_bytes,
  ranks_per_host,
  yield,
  spin_us,
  backend,
  transport,
  blocking_wait,
  mpi_thread,
  mpi_cuda_aware,
  tag_ub,
  debug,
  trace,
  fault,
  timeline,
  emu_devices,
  emu_deferred,
  emu_racecheck,
  emu_stack_kb,
  test_device,
  test_mpi_init,
  test_ranks_per_host,
  test_a2a_mismatch,
  test_user_tcp_flags,
  raw_serialized,
  mpiexec,
  mpi_impl,
  test_notice_delay,
  launch_args,
  net_prefix,
  packages,
  nccl_home,
  force_carried_deps,
  device_budget,
  torch_python,
  torch2_python,
  torch2_version,
  cache,
  count_,
};

struct Setting {
  Id id;
  std::string_view name;
  Kind kind;
  std::string_view default_text;  ///< as a user would write it; "" = unset
  std::string_view expected;  ///< what a valid value is, in words, for errors and the table
  std::string_view doc;
  Reader reader = Reader::library;
  uint64_t min = 0;
  uint64_t max = UINT64_MAX;
  uint64_t multiple_of = 1;
  std::string_view choices = {};
};

/// Every variable, in Id order.
std::span<const Setting> table();
const Setting& get(Id id);
/// The declared variable of that exact name, or nullptr.
const Setting* find(std::string_view name);

/// The variable's value when set and not empty, checked against its declaration; an Error naming
/// the variable, the value and what was expected when it is not valid.
std::optional<uint64_t> number(Id id);
std::optional<bool> flag(Id id);
/// A choice (checked against its words) or text, as written.
std::optional<std::string> text(Id id);
/// The same checks on a given value instead of the environment's (for tests and for callers
/// that hold the text already).
uint64_t parse_number(const Setting& setting, std::string_view value);
bool parse_flag(const Setting& setting, std::string_view value);
std::string parse_choice(const Setting& setting, std::string_view value);

/// One warning per RINGDP_* entry of `environment` ("NAME=value" strings) that the table does
/// not declare, naming the closest declared one.
std::vector<std::string> unknown_variables(const std::vector<std::string>& environment);
/// Prints unknown_variables(this process's environment) to stderr, once per process.
void warn_unknown_variables();

/// The table for a terminal (--help-env) and as a Markdown table (docs/settings.md).
std::string help_text();
std::string markdown_table();

}  // namespace ringdp::settings

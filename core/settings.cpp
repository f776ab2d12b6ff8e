// The table of RINGDP_* variables and their parsing (core/settings.h). Tested by
// tests/unit/test_settings.cpp; docs/settings.md is compared with markdown_table() by the cli suite.
#include "core/settings.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "core/error.h"

extern char** environ;

namespace ringdp::settings {
namespace {

constexpr uint64_t kKiB = 1024;
using enum Id;
using enum Kind;

// One row per variable, in Id order (checked below). Defaults are written as a user would set them.
constexpr Setting kTable[] = {
    {timeout, "RINGDP_TIMEOUT", number, "300", "a number of seconds from 1 to 100000000",
     "deadline of every collective; a rank past it reports where it waits and ends the job", Reader::library,
     1, 100'000'000},
    {timeout_ms, "RINGDP_TIMEOUT_MS", number, "", "a number of milliseconds from 1 to 100000000000",
     "the same deadline in milliseconds (wins over RINGDP_TIMEOUT)", Reader::library, 1, 100'000'000'000},
    {exit_grace, "RINGDP_EXIT_GRACE", number, "10", "a number of seconds from 0 to 100000000",
     "where ringdp initialised MPI: how long a rank that exits non-zero waits at exit for the others "
     "before it exits without MPI_Finalize",
     Reader::library, 0, 100'000'000},
    {segment_bytes, "RINGDP_SEGMENT_BYTES", number, "0", "a number of bytes, 0 = automatic",
     "the ring's pipelining unit; 0: 1 MiB, or 64 KiB when a host's ranks outnumber its cores (agreed: "
     "minimum "
     "over ranks)"},
    {rd_max_bytes, "RINGDP_RD_MAX_BYTES", number, "32768", "a number of bytes",
     "auto all_reduce: recursive doubling up to this size (agreed: minimum over ranks)"},
    {rabenseifner_max_bytes, "RINGDP_RABENSEIFNER_MAX_BYTES", number, "2097152",
     "a number of bytes, 0 = never",
     "auto all_reduce on 4+ ranks: Rabenseifner above RINGDP_RD_MAX_BYTES up to this size, the ring above"},
    {shm_max_bytes, "RINGDP_SHM_MAX_BYTES", number, "", "a number of bytes, 0 = never",
     "auto all_reduce with every rank on one host: shared memory up to this size (unset: every size; 0 takes "
     "no /dev/shm)"},
    {shm_scatter_min_bytes, "RINGDP_SHM_SCATTER_MIN_BYTES", number, "16384", "a number of bytes",
     "a shared-memory round this long or longer is scattered (each rank reduces 1/N of it)"},
    {shm_slot_bytes, "RINGDP_SHM_SLOT_BYTES", number, "262144", "a positive multiple of 64",
     "the most one rank's part holds in one shared-memory round; each rank's ring holds the power of two "
     "of rounds, 2 to 32, nearest below 12 MiB / (ranks on the host x this): /dev/shm needs up to about 12 "
     "MiB "
     "a host, more with larger slots",
     Reader::library, 64, UINT64_MAX, 64},
    {chain_min_bytes, "RINGDP_CHAIN_MIN_BYTES", number, "8388608", "a number of bytes",
     "auto broadcast: the binomial tree below this size, the pipelined chain from it"},
    {ranks_per_host, "RINGDP_RANKS_PER_HOST", number, "0", "a number of ranks, 0 = the real hosts",
     "treat every k consecutive ranks as one host (to try the hierarchical all-reduce on one machine)"},
    {yield, "RINGDP_YIELD", flag, "", "0 or 1",
     "yield the core while waiting (unset: only under MPICH with more ranks than cores)"},
    {spin_us, "RINGDP_SPIN_US", number, "50", "a number of microseconds from 0 to 100000000",
     "a wait polls back to back this long, then sleeps between polls (1/32 of the time waited, at most 1 ms)",
     Reader::library, 0, 100'000'000},
    {backend, "RINGDP_BACKEND", choice, "auto", "auto, mpi or nccl",
     "transport of CUDA tensors: NCCL when built in (auto), or MPI (CUDA-aware or staged)", Reader::library,
     0, UINT64_MAX, 1, "auto|mpi|nccl"},
    {transport, "RINGDP_TRANSPORT", choice, "mpi", "mpi or ucx",
     "what carries the algorithms' messages of host tensors under an MPI launcher: MPI, or UCX (MPI still "
     "starts the job, makes groups and runs --algo native)",
     Reader::library, 0, UINT64_MAX, 1, "mpi|ucx"},
    {blocking_wait, "RINGDP_BLOCKING_WAIT", flag, "0", "0 or 1",
     "CUDA tensors: every collective blocks the host until the GPU is done"},
    {mpi_thread, "RINGDP_MPI_THREAD", choice, "multiple", "multiple (the default), serialized or single",
     "the MPI thread level ringdp asks for; multiple lets groups progress independently, serialized shares "
     "one worker thread between them, single runs every call on the caller's thread",
     Reader::library, 0, UINT64_MAX, 1, "multiple|serialized|single"},
    {mpi_cuda_aware, "RINGDP_MPI_CUDA_AWARE", flag, "", "0 or 1",
     "whether MPI reads device memory (unset: what the MPI library reports)"},
    {tag_ub, "RINGDP_TAG_UB", number, "", "a positive integer",
     "caps MPI's tag upper bound (to test tag wrap-around)", Reader::library, 1},
    {debug, "RINGDP_DEBUG", choice, "OFF", "OFF, INFO or DETAIL",
     "INFO: say which transports run; DETAIL: every rank checks each collective against the others' first",
     Reader::library, 0, UINT64_MAX, 1, "OFF|INFO|DETAIL"},
    {trace, "RINGDP_TRACE", flag, "0", "0 or 1",
     "print each step of ringdp's own algorithms and DDP's bucket layout (for teaching)"},
    {fault, "RINGDP_FAULT", text, "", "a fault plan (docs/errors.md)",
     "inject a fault into one collective of one rank (docs/errors.md)"},
    {timeline, "RINGDP_TIMELINE", text, "", "a file path", "record a Chrome trace per rank: PATH.rankN.json"},
    {emu_devices, "RINGDP_EMU_DEVICES", text, "1", "a number of devices", "the CUDA emulator's device count",
     Reader::tests},
    {emu_deferred, "RINGDP_EMU_DEFERRED", text, "0", "0 or 1",
     "the CUDA emulator runs stream work later, as a GPU would", Reader::tests},
    {emu_racecheck, "RINGDP_EMU_RACECHECK", text, "1", "0 or 1",
     "the CUDA emulator's shared-memory race and init checks", Reader::tests},
    {emu_stack_kb, "RINGDP_EMU_STACK_KB", text, "", "a number of KiB", "the CUDA emulator's fiber stack size",
     Reader::tests},
    {test_device, "RINGDP_TEST_DEVICE", text, "cpu", "cpu or cuda", "where the mpi suite's tensors live",
     Reader::tests},
    {test_mpi_init, "RINGDP_TEST_MPI_INIT", text, "", "single or funneled",
     "the mpi suite initialises MPI itself at this level", Reader::tests},
    {test_ranks_per_host, "RINGDP_TEST_RANKS_PER_HOST", text, "", "a number of ranks",
     "how many ranks each namespace host holds (tests/net)", Reader::tests},
    {test_a2a_mismatch, "RINGDP_TEST_A2A_MISMATCH", text, "", "longer or empty",
     "the mpi suite's all_to_all whose counts disagree: what rank 0 expects", Reader::tests},
    {test_user_tcp_flags, "RINGDP_TEST_USER_TCP_FLAGS", text, "", "any text",
     "the Open MPI defaults test: the user set the TCP flags", Reader::tests},
    {raw_serialized, "RINGDP_RAW_SERIALIZED", text, "", "0 or 1",
     "perf/raw_allreduce initialises MPI at the serialized level", Reader::tests},
    {mpiexec, "RINGDP_MPIEXEC", text, "", "a path", "the launcher the test suites use", Reader::tests},
    {mpi_impl, "RINGDP_MPI_IMPL", text, "", "openmpi or mpich", "the MPI the tested build uses",
     Reader::tests},
    {test_notice_delay, "RINGDP_TEST_NOTICE_DELAY", text, "", "FROM:TO:MS",
     "rank FROM sends its departure notice to rank TO MS ms late (tests/mpi/rank_leaves.sh)", Reader::tests},
    {launch_args, "RINGDP_LAUNCH_ARGS", text, "", "launcher options",
     "what the torch suites add to each mpirun/mpiexec line", Reader::tests},
    {net_prefix, "RINGDP_NET_PREFIX", text, "rdpn", "a name", "names of tests/net/cluster.sh's namespaces",
     Reader::tests},
    {packages, "RINGDP_PACKAGES", text, "", "Debian package names", "what scripts/ install", Reader::tests},
    {nccl_home, "RINGDP_NCCL_HOME", text, "", "a path", "tests/gpu/device_check.sh: where NCCL is",
     Reader::tests},
    {force_carried_deps, "RINGDP_FORCE_CARRIED_DEPS", text, "", "any text",
     "tests/gpu/device_check.sh: use the carried Meson and Catch2", Reader::tests},
    {device_budget, "RINGDP_DEVICE_BUDGET", text, "420", "a number of seconds",
     "tests/gpu/device_check.sh's overall budget", Reader::tests},
    {torch_python, "RINGDP_TORCH_PYTHON", text, "/usr/bin/python3", "a path",
     "the Python (and so the torch) the torch suites run with", Reader::tests},
    {torch2_python, "RINGDP_TORCH2_PYTHON", text, "", "a path",
     "the PyTorch 2.x venv's Python for the torch2 suites (scripts/test sets it)", Reader::tests},
    {torch2_version, "RINGDP_TORCH2_VERSION", text, "2.15.0", "a PyPI torch version",
     "the torch scripts/ install into the venv they make", Reader::tests},
    {cache, "RINGDP_CACHE", text, "~/.cache/ringdp", "a path",
     "where scripts/ keep that venv, shared by every clone", Reader::tests},
};
static_assert(std::size(kTable) == static_cast<size_t>(Id::count_), "one row per Id");
constexpr bool in_id_order() {
  for (size_t i = 0; i < std::size(kTable); ++i)
    if (static_cast<size_t>(kTable[i].id) != i) return false;
  return true;
}
static_assert(in_id_order(), "kTable's rows are in Id order, so get() is an index");

std::optional<std::string_view> raw(const Setting& s) {
  const char* value = std::getenv(std::string(s.name).c_str());
  if (!value) return std::nullopt;
  // Set but empty is most likely a script's variable that expanded to nothing: say so rather than
  // run with the default in silence.
  RINGDP_CHECK(*value, s.name, " is set but empty: expected ", s.expected, " (unset it for the default)");
  return std::string_view(value);
}

[[noreturn]] void fail_value(const Setting& s, std::string_view value, std::string_view hint = {}) {
  RINGDP_FAIL(s.name, "='", value, "': expected ", s.expected, hint);
}

// "2.5" for a count of seconds: the expected range alone read as if 2.5 were in it.
bool has_fraction(std::string_view value) {
  const size_t dot = value.find('.');
  if (dot == std::string_view::npos || value.find('.', dot + 1) != std::string_view::npos) return false;
  const std::string_view whole = value.substr(0, dot), part = value.substr(dot + 1);
  const auto digits = [](std::string_view t) {
    return t.find_first_not_of("0123456789") == std::string_view::npos;
  };
  return digits(whole) && digits(part) && whole.size() + part.size() > 0;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::span<const Setting> table() { return kTable; }
const Setting& get(Id id) { return kTable[static_cast<size_t>(id)]; }

const Setting* find(std::string_view name) {
  for (const Setting& s : kTable)
    if (s.name == name) return &s;
  return nullptr;
}

uint64_t parse_number(const Setting& s, std::string_view value) {
  uint64_t parsed = 0;
  if (value.empty()) fail_value(s, value);
  if (has_fraction(value)) fail_value(s, value, "; whole numbers only");
  for (char c : value) {
    if (c < '0' || c > '9' || parsed > (UINT64_MAX - 9) / 10) fail_value(s, value);
    parsed = parsed * 10 + static_cast<uint64_t>(c - '0');
  }
  if (parsed < s.min || parsed > s.max || parsed % s.multiple_of != 0) fail_value(s, value);
  return parsed;
}

bool parse_flag(const Setting& s, std::string_view value) {
  for (std::string_view yes : {"1", "true", "yes", "on"})
    if (value == yes) return true;
  for (std::string_view no : {"0", "false", "no", "off"})
    if (value == no) return false;
  fail_value(s, value);
}

std::string parse_choice(const Setting& s, std::string_view value) {
  std::string_view words = s.choices;
  while (!words.empty()) {
    const size_t bar = words.find('|');
    if (words.substr(0, bar) == value) return std::string(value);
    words = bar == std::string_view::npos ? std::string_view{} : words.substr(bar + 1);
  }
  fail_value(s, value);
}

std::optional<uint64_t> number(Id id) {
  const Setting& s = get(id);
  if (auto value = raw(s)) return parse_number(s, *value);
  return std::nullopt;
}

std::optional<bool> flag(Id id) {
  const Setting& s = get(id);
  if (auto value = raw(s)) return parse_flag(s, *value);
  return std::nullopt;
}

std::optional<std::string> text(Id id) {
  const Setting& s = get(id);
  auto value = raw(s);
  if (!value) return std::nullopt;
  return s.kind == Kind::choice ? parse_choice(s, *value) : std::string(*value);
}

std::vector<std::string> unknown_variables(const std::vector<std::string>& environment) {
  std::vector<std::string> warnings;
  for (const std::string& entry : environment) {
    const std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("RINGDP_", 0) != 0 || find(name)) continue;
    // Fewest edits; among equals the longest shared prefix (RINGDP_SHM_MAX is RINGDP_SHM_MAX_BYTES
    // cut short, not RINGDP_TIMEOUT misspelt).
    auto score = [&](const Setting& s) {
      size_t prefix = 0;
      while (prefix < name.size() && prefix < s.name.size() && name[prefix] == s.name[prefix]) ++prefix;
      return std::pair<size_t, size_t>(edit_distance(name, s.name), SIZE_MAX - prefix);
    };
    const Setting* closest = &kTable[0];
    for (const Setting& s : kTable)
      if (score(s) < score(*closest)) closest = &s;
    // Quoted when it holds what a reader cannot see or would not expect ("RINGDP_TIMEOUT ").
    const bool plain = name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
    warnings.push_back(detail::concat(plain ? name : "'" + name + "'",
                                      " is not a ringdp setting and is ignored (did you mean ", closest->name,
                                      "? --help-env lists them all)"));
  }
  return warnings;
}

void warn_unknown_variables() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> environment;
    for (char** entry = environ; entry && *entry; ++entry) environment.emplace_back(*entry);
    for (const std::string& warning : unknown_variables(environment))
      std::fprintf(stderr, "ringdp: warning: %s\n", warning.c_str());
  });
}

std::string help_text() {
  std::string out = "Environment variables (RINGDP_*), read at start-up; a bad value is an error:\n";
  for (Reader reader : {Reader::library, Reader::tests}) {
    out += reader == Reader::library ? "\n" : "\nRead by ringdp's tests, test doubles and scripts only:\n";
    for (const Setting& s : kTable) {
      if (s.reader != reader) continue;
      out += detail::concat("  ", s.name, "=", s.expected,
                            s.default_text.empty() ? "" : detail::concat(" (default ", s.default_text, ")"),
                            "\n      ", s.doc, "\n");
    }
  }
  return out;
}

std::string markdown_table() {
  std::string out =
      "| variable | read by | default | expected | what it does |\n| --- | --- | --- | --- | --- |\n";
  for (const Setting& s : kTable)
    out += detail::concat("| `", s.name, "` | ", s.reader == Reader::library ? "ringdp" : "tests", " | ",
                          s.default_text.empty() ? "" : detail::concat("`", s.default_text, "`"), " | ",
                          s.expected, " | ", s.doc, " |\n");
  return out;
}

}  // namespace ringdp::settings

// Implements core/file_identity.h (the contract is documented there). Tested by
// tests/unit/test_file_identity.cpp.
#include "core/file_identity.h"

#include <sys/stat.h>

#include <filesystem>
#include <system_error>

#include "core/atomic_file.h"
#include "core/error.h"

namespace ringdp {

namespace fs = std::filesystem;

namespace {
// `path` made absolute with the links of what exists of it resolved (all of it when `follow_last`,
// else all but its last part): where it points, however spelled. A current folder that is gone
// leaves the path as given.
fs::path resolved(const std::string& path, bool follow_last) {
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error);
  if (error) return fs::path(path).lexically_normal();
  const fs::path whole = absolute.lexically_normal();
  if (follow_last) {
    const fs::path followed = fs::weakly_canonical(whole, error);
    return error ? whole : followed;
  }
  const fs::path folder = fs::weakly_canonical(whole.parent_path(), error);
  return (error ? whole.parent_path() : folder) / whole.filename();
}

bool is_special(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

// Where an output's bytes land (core/atomic_file.h): a link is written through, a loop of links
// is written nowhere (the write fails) and so is compared as spelled.
std::string landing(const std::string& output) {
  try {
    return written_path(output);
  } catch (const Error&) {
    return output;
  }
}
}  // namespace

bool overwrites(const std::string& output, const std::string& other, bool other_is_output) {
  if (is_special(output)) return false;
  return resolved(landing(output), false) ==
         resolved(other_is_output ? landing(other) : other, !other_is_output);
}

void require_distinct_outputs(const std::vector<NamedPath>& paths) {
  for (const NamedPath& out : paths)
    for (const NamedPath& other : paths) {
      if (&out == &other || !out.output || out.path.empty() || other.path.empty()) continue;
      if (other.output && &other < &out) continue;  // each pair of outputs once
      if (!overwrites(out.path, other.path, other.output)) continue;
      throw Error(detail::concat(out.flag, " '", out.path, "' is the same file as ", other.flag, " '",
                                 other.path, "': it would be overwritten by this run's ",
                                 other.output ? "other output" : "output", "; name another file"));
    }
}

}  // namespace ringdp

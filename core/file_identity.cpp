// Implements core/file_identity.h (the contract is documented there). Tested by
// tests/unit/test_file_identity.cpp.
#include "core/file_identity.h"

#include <sys/stat.h>

#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace ringdp {

namespace {
// The path a write to `path` would land on: its last link followed (write_file_atomically writes
// beside a link's target), its folder's links resolved; for a path that does not exist yet, as
// far as it goes.
std::filesystem::path resolved(const std::string& path) {
  std::error_code error;
  const std::filesystem::path followed =
      std::filesystem::weakly_canonical(std::filesystem::absolute(path), error);
  return error ? std::filesystem::absolute(path).lexically_normal() : followed;
}
}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  struct stat first {};
  struct stat second {};
  if (::stat(a.c_str(), &first) == 0 && ::stat(b.c_str(), &second) == 0)
    return first.st_dev == second.st_dev && first.st_ino == second.st_ino;
  return resolved(a) == resolved(b);
}

void require_distinct_outputs(const std::vector<NamedPath>& paths) {
  for (size_t i = 0; i < paths.size(); ++i)
    for (size_t j = i + 1; j < paths.size(); ++j) {
      const NamedPath& x = paths[i];
      const NamedPath& y = paths[j];
      if ((!x.output && !y.output) || x.path.empty() || y.path.empty() || !same_file(x.path, y.path))
        continue;
      const NamedPath& out = x.output ? x : y;
      const NamedPath& other = x.output ? y : x;
      throw Error(detail::concat(out.flag, " '", out.path, "' is the same file as ", other.flag, " '",
                                 other.path, "': it would be overwritten by this run's ",
                                 other.output ? "other output" : "output", "; name another file"));
    }
}

}  // namespace ringdp

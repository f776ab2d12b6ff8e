// Whether two paths name one file, whatever their spellings ("d.csv", "./d.csv", an absolute path,
// a link to it): what a program checks before it writes, so that no output of a run overwrites
// one of its inputs or another of its outputs (ringdp-train's --data, --init, --checkpoint and
// --export; ringdp-bench's --csv and --json). Tested by tests/unit/test_file_identity.cpp and
// tests/cli (train.sh and bench.sh same-file).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ringdp {

/// True when `a` and `b` name the same file: the same device and inode where both exist, else the
/// same path once each is made absolute, its folder's links resolved and its last link followed.
bool same_file(const std::string& a, const std::string& b);

/// One path a run reads or writes, and the flag that named it ("--data").
struct NamedPath {
  std::string flag;
  std::string path;
  bool output = false;
};

/// Throws an Error naming both flags and paths when an output is the same file as any other path
/// of `paths` (an input, or another output); empty paths are not files and are skipped.
void require_distinct_outputs(const std::vector<NamedPath>& paths);

}  // namespace ringdp

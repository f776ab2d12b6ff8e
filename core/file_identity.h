// Whether writing one path of a run destroys another, whatever their spellings ("d.csv",
// "./d.csv", an absolute path, "sub/../d.csv"): what a program checks before it writes, so that no
// output of a run overwrites one of its inputs or another of its outputs (ringdp-train's --data,
// --init, --checkpoint and --export; ringdp-bench's --csv and --json). It follows what
// core/atomic_file.h does: a new file is renamed over the folder entry of the file at the end of
// the output's chain of symbolic links (so a hard link's other names keep the old file), and a
// file that is not a regular one (a pipe, /dev/stdout) is written in place and replaces nothing. Tested by
// tests/unit/test_file_identity.cpp and tests/cli (train.sh and bench.sh paths).
#pragma once

#include <string>
#include <vector>

namespace ringdp {

/// True when writing `output` (atomically) replaces the file `other` names: the file an input
/// reads through `other` (every link followed), or the file another output writes
/// (`other_is_output`). False when `output` is not a regular file (written in place).
bool overwrites(const std::string& output, const std::string& other, bool other_is_output);

/// One path a run reads or writes, and the flag that named it ("--data").
struct NamedPath {
  std::string flag;
  std::string path;
  bool output = false;
};

/// Throws an Error naming both flags and paths when writing an output of `paths` would replace
/// another of them (an input, or another output); empty paths are not files and are skipped.
void require_distinct_outputs(const std::vector<NamedPath>& paths);

}  // namespace ringdp

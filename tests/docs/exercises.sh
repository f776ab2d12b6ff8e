#!/usr/bin/env bash
# The exercises of docs/exercises.md whose change is to the sources, run as the page tells a learner
# to: each block marked `patch=docs/exercises/N-*.patch` is applied to a scratch copy of the tree,
# rebuilt by the block's own `ninja -C build ...` line, checked against what the page says it
# prints (tests/docs/run_docs.py --patched), and undone. The scratch build is configured once and
# rebuilt incrementally per exercise; the first build is the slow part (minutes on 2 cores), which
# is why this is the `exercises` suite and not part of `docs`.
# Usage: tests/docs/exercises.sh SOURCE_DIR [SCRATCH_DIR]   (SCRATCH_DIR is kept when given, to reuse)
set -euo pipefail
source_dir=$(cd "$1" && pwd)
if ! git -C "$source_dir" rev-parse --git-dir >/dev/null 2>&1; then
  echo "SKIPPED: $source_dir is not a git checkout (the scratch copy is made of git ls-files)"
  exit 77
fi
scratch=${2:-}
if [ -z "$scratch" ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
fi
mkdir -p "$scratch/src"
# The tree as committed plus the working changes, without build folders: what a learner has. Only
# files that differ are copied, with a new time, so a reused scratch build rebuilds exactly those
# (a copy that kept the source's older time would leave a stale object in place).
(cd "$source_dir" && git ls-files -z --cached --others --exclude-standard) |
  while IFS= read -r -d '' file; do
    [ -f "$source_dir/$file" ] || continue
    cmp -s "$source_dir/$file" "$scratch/src/$file" && continue
    mkdir -p "$scratch/src/$(dirname "$file")"
    cp "$source_dir/$file" "$scratch/src/$file"
  done
if [ ! -f "$scratch/build/build.ninja" ]; then
  meson setup "$scratch/build" "$scratch/src" -Dtorch=disabled -Dcuda=disabled -Doptimization=0 -Ddebug=false \
    >"$scratch/setup.log" 2>&1 ||
    { cat "$scratch/setup.log"; exit 1; }
fi
# The page's commands say `build/...`: run_docs.py links build -> the scratch build.
# Not exec: the trap above removes the scratch copy (about 40 MB) when the page is done.
/usr/bin/python3 "$source_dir/tests/docs/run_docs.py" --patched "$scratch/build" "$scratch/src" docs/exercises.md

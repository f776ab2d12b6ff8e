#!/usr/bin/env bash
# Every C++ and CUDA source is as clang-format writes it with the repository's .clang-format:
#   tests/lint/format.sh SOURCE_ROOT
# Pinned to clang-format 14 (Debian 12's): other versions format some constructs differently,
# so they skip (exit 77) rather than fail code that 14 accepts. To fix: the command in .clang-format.
set -uo pipefail
cd "$1" || exit 1
format=$(command -v clang-format-14 || command -v clang-format) || { echo "SKIPPED: clang-format is not installed"; exit 77; }
major=$("$format" --version | grep -oE 'version [0-9]+' | grep -oE '[0-9]+')
[ "$major" = 14 ] || { echo "SKIPPED: $format is version $major; the check is pinned to 14"; exit 77; }
mapfile -t sources < <(find core kernels tensor autograd comm apps bindings tests perf \
  \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) -not -path 'tests/fuzz/corpus/*' | sort)
bad=()
for source in "${sources[@]}"; do
  "$format" --dry-run --Werror "$source" >/dev/null 2>&1 || bad+=("$source")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "FAIL: ${#bad[@]} of ${#sources[@]} files differ from clang-format's output: ${bad[*]}"
  "$format" --dry-run "${bad[0]}" 2>&1 | head -n 12
  exit 1
fi
echo "${#sources[@]} files formatted as .clang-format says"

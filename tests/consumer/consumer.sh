#!/usr/bin/env bash
# ringdp as a user of the library sees it: tests/consumer/consumer.sh SOURCE_ROOT BUILD_DIR
# Installs the build into a temporary folder (meson install --destdir), checks that every
# installed header compiles on its own against that folder alone (a header that was not
# installed, or an internal include that leaks, fails here), builds examples/ against it with
# pkg-config (Meson) and with find_package (CMake), and runs them: hello_allreduce on 1-3 ranks
# (every rank, every algorithm, the right sums) and custom_training on 2 ranks (the loss falls,
# the checkpoint is written).
source_root=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
source "$(dirname "$0")/../cli/common.sh"
command -v cmake >/dev/null || fail "cmake is not installed (scripts/test installs it): the CMake half needs it"

meson install -C "$build" --destdir "$work/dest" --no-rebuild --quiet >"$work/install.log" 2>&1 ||
  fail "meson install failed: $(tail -5 "$work/install.log")"
pc=$(find "$work/dest" -name ringdp.pc | head -1)
cmake_dir=$(dirname "$(find "$work/dest" -name ringdpConfig.cmake | head -1)")
[ -n "$pc" ] || fail "no ringdp.pc installed"
[ -f "$cmake_dir/ringdpConfigVersion.cmake" ] || fail "no CMake package config installed"
for program in ringdp-train ringdp-bench ringdp-plot-bench; do
  [ -x "$(dirname "$pc")/../../../bin/$program" ] || [ -x "$(dirname "$pc")/../../bin/$program" ] ||
    fail "$program not installed"
done
export PKG_CONFIG_PATH="$(dirname "$pc")"
cflags=$(pkg-config --cflags ringdp) || fail "pkg-config cannot read the installed ringdp.pc"
include_root=$(pkg-config --variable=includedir ringdp)/ringdp
count=0
while IFS= read -r header; do
  rel=${header#"$include_root"/}
  # shellcheck disable=SC2086
  g++ -std=c++20 -fsyntax-only $cflags -x c++ - <<<"#include \"$rel\"" 2>"$work/header.log" ||
    fail "installed header $rel does not compile against the install alone: $(head -3 "$work/header.log")"
  count=$((count + 1))
done < <(find "$include_root" -name '*.h')
echo "ok: $count installed headers compile on their own against the install"

meson setup "$work/meson-build" "$source_root/examples" >"$work/meson.log" 2>&1 ||
  fail "meson setup of examples/ against the install failed: $(tail -5 "$work/meson.log")"
ninja -C "$work/meson-build" >>"$work/meson.log" 2>&1 || fail "examples (meson) did not build: $(grep -m3 error "$work/meson.log")"
# Ninja, which ringdp's own build needs anyway: a fresh machine need not have make.
cmake -G Ninja -S "$source_root/examples" -B "$work/cmake-build" -Dringdp_DIR="$cmake_dir" >"$work/cmake.log" 2>&1 ||
  fail "cmake of examples/ against the install failed: $(tail -5 "$work/cmake.log")"
cmake --build "$work/cmake-build" >>"$work/cmake.log" 2>&1 ||
  fail "examples (CMake) did not build: $(grep -m3 error "$work/cmake.log")"
echo "ok: examples/ built against the install with pkg-config (Meson) and find_package (CMake)"

# As a Meson subproject: dependency('ringdp') is resolved from the subproject's
# meson.override_dependency (configured, not built: building would compile ringdp a second time).
mkdir -p "$work/parent/subprojects"
ln -s "$source_root" "$work/parent/subprojects/ringdp"
cp "$source_root/examples/hello_allreduce.cpp" "$work/parent/"
cat >"$work/parent/meson.build" <<'MESON'
project('parent', 'cpp', default_options: ['cpp_std=c++20'])
ringdp = dependency('ringdp', fallback: 'ringdp')
assert(ringdp.type_name() == 'internal', 'dependency(ringdp) did not come from the subproject')
executable('hello_allreduce', 'hello_allreduce.cpp', dependencies: ringdp)
MESON
env -u PKG_CONFIG_PATH meson setup "$work/parent/build" "$work/parent" -Dringdp:tests=disabled -Dringdp:cuda=disabled \
  >"$work/subproject.log" 2>&1 || fail "a Meson project with ringdp as a subproject did not configure: $(tail -5 "$work/subproject.log")"
echo "ok: a Meson project with ringdp as a subproject gets dependency('ringdp') from it"

launch() {  # launch NP PROGRAM: under the build's launcher, or alone in a build without MPI
  if [ "${RINGDP_MPI_IMPL:-none}" = none ]; then
    out=$(cd "$work" && timeout 120 "$2" 2>&1)
  else
    out=$(cd "$work" && timeout 120 "$mpiexec" -n "$1" "${launch_args[@]}" "$2" 2>&1)
  fi
  rc=$?
}
for np in 1 2 3; do
  # A build without MPI runs one rank only: say so instead of reporting runs that did not happen.
  if [ "${RINGDP_MPI_IMPL:-none}" = none ] && [ "$np" -gt 1 ]; then
    echo "skipped: hello_allreduce on $np ranks (a build without MPI)"
    continue
  fi
  for flavour in meson cmake; do
    launch "$np" "$work/$flavour-build/hello_allreduce"
    [ $rc -eq 0 ] || fail "hello_allreduce ($flavour) on $np ranks: exit $rc: $out"
    sum=$((np * (np + 1) / 2))
    for algorithm in ring recursive_doubling native auto; do
      for ((r = 0; r < np; ++r)); do
        grep -qx "rank $r of $np, $algorithm: $sum $((10 * sum)) $((100 * sum))" <<<"$out" ||
          fail "hello_allreduce ($flavour), $np ranks: no 'rank $r of $np, $algorithm: $sum ...' in: $out"
      done
    done
  done
  echo "ok: hello_allreduce on $np rank(s): every rank, every algorithm, sums $sum $((10 * sum)) $((100 * sum))"
done

np=2
[ "${RINGDP_MPI_IMPL:-none}" = none ] && np=1
launch "$np" "$work/meson-build/custom_training"
[ $rc -eq 0 ] || fail "custom_training on $np ranks: exit $rc: $out"
first=$(awk '/^epoch 1 loss/ {print $4}' <<<"$out")
last=$(awk '/^epoch 15 loss/ {print $4}' <<<"$out")
[ -n "$first" ] && [ -n "$last" ] || fail "custom_training printed no epoch 1 and 15 losses: $out"
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a / 10) }' || fail "custom_training: loss $first -> $last did not fall tenfold"
[ -s "$work/custom_training.ckpt" ] || fail "custom_training wrote no checkpoint"
echo "ok: custom_training on $np ranks: loss $first -> $last, checkpoint written"

#!/usr/bin/env bash
# The one script for the GPU machine (see tests/gpu/prepare-deps.sh for what to carry). Checks
# what the machine has, builds with CUDA, runs the cuda suite, compute-sanitizer memcheck and
# racecheck on the kernel tests, and the kernel benchmark; writes logs and a results table
# under $OUT (build/device elsewhere) and prints the table last. Without a GPU it says so and
# still builds and runs what it can. Budget: under 8 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
out=${OUT:-$root/build/device}
mkdir -p "$out"
results="$out/results.md"
: >"$results"
note() { printf '%s\n' "$*" | tee -a "$results"; }
start=$SECONDS

note "# ringdp device check, $(date -u '+%Y-%m-%d %H:%M UTC')"
note ""
# --- what is here ------------------------------------------------------------------------
export PATH="/usr/local/cuda/bin:$PATH"
gpu="none"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then gpu=$(nvidia-smi -L | head -1); fi
note "- GPU: $gpu"
note "- nvcc: $(nvcc --version 2>/dev/null | tail -1 || echo missing)"
nccl_h=$(ls /usr/local/cuda/include/nccl.h /usr/include/nccl.h 2>/dev/null | head -1)
note "- NCCL header: ${nccl_h:-none} $( [ -n "$nccl_h" ] && grep -E 'define NCCL_(MAJOR|MINOR|PATCH) ' "$nccl_h" | awk '{printf "%s.", $3}')"
note "- mpirun: $(command -v mpirun || echo 'missing: multi-rank GPU checks skipped')"
note "- meson: $(meson --version 2>/dev/null || python3 -m mesonbuild.mesonmain --version 2>/dev/null || echo missing), ninja: $(ninja --version 2>/dev/null || echo missing)"

# --- carried Debian packages (tests/gpu/prepare-deps.sh) -------------------------------------
if [ -d .device-deps ] && { [ -n "${RINGDP_FORCE_CARRIED_DEPS:-}" ] || ! pkg-config --exists catch2 2>/dev/null; }; then
  prefix=/tmp/ringdp-deps
  mkdir -p "$prefix"
  for deb in .device-deps/*.deb; do dpkg -x "$deb" "$prefix"; done
  export PATH="$prefix/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:$prefix/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [ -e "$prefix/usr/bin/pkg-config" ] || ln -sf pkgconf "$prefix/usr/bin/pkg-config"
  export PKG_CONFIG_PATH="$prefix/usr/share/pkgconfig:$prefix/usr/lib/x86_64-linux-gnu/pkgconfig:$prefix/usr/lib/x86_64-linux-gnu/openblas-pthread/pkgconfig"
  export PKG_CONFIG_SYSROOT_DIR="$prefix"
  export LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu/openblas-pthread:$prefix/usr/lib/x86_64-linux-gnu"
  note "- carried packages unpacked into $prefix"
fi
meson_cmd=(meson)
command -v meson >/dev/null || meson_cmd=(python3 -m mesonbuild.mesonmain)

# --- build ------------------------------------------------------------------------------------
build=build-device
cuda_opt=-Dcuda=enabled
command -v nvcc >/dev/null || cuda_opt=-Dcuda=disabled
mpi_opt=-Dmpi=auto
command -v mpirun >/dev/null || mpi_opt=-Dmpi=disabled
if ! "${meson_cmd[@]}" setup --reconfigure "$build" "$cuda_opt" "$mpi_opt" -Dtests=enabled >"$out/configure.log" 2>&1 &&
   ! "${meson_cmd[@]}" setup "$build" "$cuda_opt" "$mpi_opt" -Dtests=enabled >"$out/configure.log" 2>&1; then
  note "- configure FAILED (see configure.log)"; tail -30 "$out/configure.log"; exit 1
fi
grep -A8 'Features' "$out/configure.log" | sed 's/^/    /' | tee -a "$results"
if ! ninja -C "$build" -j"$(nproc)" >"$out/build.log" 2>&1; then
  note "- build FAILED (see build.log)"; tail -40 "$out/build.log"; exit 1
fi
note "- built in $((SECONDS - start)) s"
note ""
note "| check | result |"
note "| --- | --- |"

# --- tests --------------------------------------------------------------------------------------
"${meson_cmd[@]}" test -C "$build" --suite unit --suite cuda --print-errorlogs >"$out/tests.log" 2>&1
note "| unit + cuda suites | $(grep -E '^(Ok|Fail|Skipped|Timeout):' "$out/tests.log" | tr -s ' ' | tr '\n' ' ') |"
kernel_tests="$build/tests/cuda/test_kernels_cuda"
if [ "$gpu" = none ]; then
  note "| cuda kernels | SKIPPED: no CUDA device |"
else
  "$kernel_tests" >"$out/cuda-kernels.log" 2>&1
  note "| cuda kernels (all sizes) | exit $? ($(grep -E 'test cases|All tests passed' "$out/cuda-kernels.log" | tail -1)) |"
  if command -v compute-sanitizer >/dev/null; then
    # The sanitizers slow kernels 10-100x: run the small-size cases only.
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$kernel_tests" '~[large]' >"$out/memcheck.log" 2>&1
    note "| compute-sanitizer memcheck | exit $? ($(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tail -1)) |"
    timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 "$kernel_tests" '[linear]~[large]' '[mse]' >"$out/racecheck.log" 2>&1
    note "| compute-sanitizer racecheck | exit $? ($(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$out/racecheck.log" | tail -1)) |"
  else
    note "| compute-sanitizer | SKIPPED: not installed |"
  fi
  if [ -x "$build/bench/ringdp-kernel-bench" ]; then
    timeout 180 "$build/bench/ringdp-kernel-bench" 20 >"$out/kernel-bench.log" 2>&1
    note "| kernel benchmark | exit $? (table below) |"
  fi
  # NCCL at world size 1 and the trainer on cuda:0 need the NCCL transport (issue 7).
  note "| NCCL world size 1 | SKIPPED: the NCCL transport is not in this build yet |"
fi
if ! command -v mpirun >/dev/null; then
  note "| multi-rank GPU over MPI | SKIPPED: no mpirun on this machine |"
fi
note ""
note "Total $((SECONDS - start)) s."
if [ -s "$out/kernel-bench.log" ]; then
  note ""
  note '```'
  cat "$out/kernel-bench.log" | tee -a "$results" >/dev/null
  note '```'
fi
echo
cat "$results"

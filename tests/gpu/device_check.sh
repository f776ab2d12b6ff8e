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
  note "| NCCL world size 1 (every collective and algorithm) | $(grep -E 'nccl world size 1' "$out/tests.log" | awk '{print $(NF-1), $NF}' | head -1) |"
  if command -v mpirun >/dev/null && [ -x "$build/tests/mpi/test_mpi_collectives" ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    for np in 2 4; do
      RINGDP_DEBUG=INFO RINGDP_TEST_DEVICE=cuda RINGDP_BACKEND=mpi timeout 200 mpirun -np $np --oversubscribe \
        -x RINGDP_DEBUG -x RINGDP_TEST_DEVICE -x RINGDP_BACKEND \
        "$build/tests/mpi/test_mpi_collectives" '[all_reduce],[broadcast],[reduce_scatter]' >"$out/mpi-fallback-np$np.log" 2>&1
      rc=$?
      note "| $np ranks, one GPU, CUDA tensors over the MPI fallback ($(grep -m1 -o 'over MPI: .*' "$out/mpi-fallback-np$np.log" || echo 'path not printed')) | exit $rc |"
    done
    # The staged fallback's bandwidth: ringdp's ring (per-segment staging, overlapped) against MPI's
    # own all-reduce on whole-tensor host copies, in the same run.
    timeout 120 mpirun -np 2 --oversubscribe "$build/apps/bench/ringdp-bench" --backend mpi --device cuda \
      --algo all -b 1M -e 64M -f 4 -n 10 -w 3 >"$out/bench-mpi-cuda.log" 2>&1
    note "| ringdp-bench --backend mpi --device cuda, 2 ranks | exit $? (bench-mpi-cuda.log) |"
    nccl_minor=$(grep -E 'define NCCL_MINOR ' "$nccl_h" 2>/dev/null | awk '{print $3}')
    if [ "${nccl_minor:-0}" -ge 30 ]; then
      NCCL_MULTI_RANK_GPU_ENABLE=1 RINGDP_TEST_DEVICE=cuda RINGDP_BACKEND=nccl timeout 200 mpirun -np 2 --oversubscribe \
        -x NCCL_MULTI_RANK_GPU_ENABLE -x RINGDP_TEST_DEVICE -x RINGDP_BACKEND "$build/tests/mpi/test_mpi_collectives" '[all_reduce]' \
        >"$out/nccl-np2.log" 2>&1
      note "| 2 ranks on one GPU over NCCL (NCCL_MULTI_RANK_GPU_ENABLE=1) | exit $? |"
    else
      note "| 2 ranks on one GPU over NCCL | SKIPPED: NCCL 2.${nccl_minor:-?} refuses two ranks on one GPU (2.30+ needed) |"
    fi
    timeout 120 mpirun -np 2 --oversubscribe "$build/apps/train/ringdp-train" --device cuda --backend mpi --export "$out/train-cuda.json" >"$out/train-cuda.log" 2>&1
    timeout 120 mpirun -np 2 --oversubscribe "$build/apps/train/ringdp-train" --device cpu --export "$out/train-cpu.json" >"$out/train-cpu.log" 2>&1
    match=$(python3 -c "
import json,sys
a=json.load(open('$out/train-cuda.json')); b=json.load(open('$out/train-cpu.json'))
d=max(abs(x-y)/max(1,abs(y)) for k in b for x,y in zip(a[k]['data'],b[k]['data']))
print('max relative difference %.2e: %s' % (d, 'match' if d < 1e-4 else 'MISMATCH'))" 2>&1)
    note "| 2-rank ringdp-train --device cuda vs --device cpu | $match |"
  else
    note "| multi-rank GPU checks | SKIPPED: no mpirun on this machine (or ringdp built without MPI) |"
  fi
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

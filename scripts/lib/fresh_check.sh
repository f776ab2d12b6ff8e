# ringdp_fresh_check: what a new user gets. Clones the committed tree (HEAD: uncommitted work is
# not in it, and is named) into a temporary folder and runs the README's two commands there,
# as written, timing each. Packages a bare machine lacks are installed by those commands
# themselves; this check proves the clone builds, demos and tests from nothing but git.
# Sourced by scripts/test (--fresh-check).
ringdp_fresh_check() {
  local source_tree=$PWD dirty
  dirty=$(git status --porcelain | wc -l)
  [ "$dirty" -eq 0 ] || ringdp_log "note: $dirty uncommitted change(s) are not in the clone; this checks HEAD $(git rev-parse --short HEAD)"
  local scratch
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/ringdp-fresh.XXXXXX")
  # shellcheck disable=SC2064  # the folder is fixed now, on purpose
  trap "rm -rf '$scratch'" EXIT
  ringdp_step "cloning for the fresh check" "is $source_tree a git checkout with at least one commit?"
  git clone -q "$source_tree" "$scratch/ringdp"
  cd "$scratch/ringdp"
  # The commit cloned, named at the end: the source tree's HEAD may move during the long run.
  local cloned
  cloned=$(git rev-parse --short HEAD)
  local command status failed=0 start report=()
  ringdp_step "fresh check" "the failing command's own output is above; rerun it in $scratch/ringdp to see it again"
  for command in scripts/demo scripts/test; do
    echo "== fresh-check: $command in $scratch/ringdp =="
    start=$SECONDS
    status=0
    # Without ccache's earlier objects: a new user's machine has none (scripts/lib/setup.sh).
    CCACHE_DISABLE=1 "$command" || status=$?
    report+=("$command: $((SECONDS - start)) s, exit $status")
    [ $status -eq 0 ] || failed=1
  done
  cd "$source_tree"
  echo "== fresh-check of $cloned, $(date -u '+%Y-%m-%d %H:%M UTC') =="
  printf '%s\n' "${report[@]}"
  [ $failed -eq 0 ] || ringdp_log "fresh check FAILED: see the command's output above"
  return $failed
}

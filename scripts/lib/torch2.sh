# PyTorch 2.x beside Debian's 1.13 (issue #50): a venv with PyPI's torch, outside the clone and kept
# between clones (about 5.4 GB: downloaded once per machine), and ringdp_torch pip-installed into it
# as a user installs it (pyproject.toml). Sourced by scripts/test after scripts/lib/setup.sh.
#   RINGDP_TORCH2_VERSION   the one pinned version (change it here, or in the environment)
#   RINGDP_CACHE            where the venv lives (default ~/.cache/ringdp, or $XDG_CACHE_HOME/ringdp)
RINGDP_TORCH2_VERSION=${RINGDP_TORCH2_VERSION:-2.15.0}
RINGDP_CACHE=${RINGDP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ringdp}
RINGDP_TORCH2_VENV="$RINGDP_CACHE/torch-$RINGDP_TORCH2_VERSION"
# Clones on one machine share the venv: making it, and installing a clone's ringdp_torch then
# testing it, each hold this lock, so one run never tests another's module.
RINGDP_TORCH2_LOCK="$RINGDP_CACHE/torch-$RINGDP_TORCH2_VERSION.lock"

# ringdp_torch2_venv: makes the venv once; prints nothing and returns 1 (with a warning) where it
# cannot (no network): the torch2 suite then says SKIPPED. A venv whose making was cut off has no
# completion mark and is made again.
ringdp_torch2_venv() {
  local venv=$RINGDP_TORCH2_VENV lock
  mkdir -p "$RINGDP_CACHE" || { ringdp_log "warning: cannot make $RINGDP_CACHE: the torch2 suite will be skipped"; return 1; }
  exec {lock}>"$RINGDP_TORCH2_LOCK"
  flock "$lock"
  [ -f "$venv/.ringdp-complete" ] && return 0
  rm -rf "$venv"
  ringdp_log "making $venv: PyPI's torch $RINGDP_TORCH2_VERSION (about 5.4 GB, once per machine; its output: $RINGDP_SETUP_LOG)"
  # meson-python, meson and ninja: what `pip install --no-build-isolation` of ringdp needs in the
  # environment; numpy silences torch's warning; expecttest serves PyTorch's own test helpers.
  if ringdp_logged /usr/bin/python3 -m venv "$venv" &&
    ringdp_logged "$venv/bin/python" -m pip install --disable-pip-version-check --root-user-action=ignore \
      "torch==$RINGDP_TORCH2_VERSION" numpy meson-python meson ninja expecttest; then
    touch "$venv/.ringdp-complete"
    return 0
  fi
  ringdp_log "warning: could not make the PyTorch $RINGDP_TORCH2_VERSION venv (offline?): the torch2 suite will be skipped"
  rm -rf "$venv"
  return 1
}

# ringdp_torch2_install: takes the lock (held until the script ends, so through the torch2 suite),
# builds ringdp_torch against the venv's torch and installs it there, as docs/torch.md tells users
# to (its build folder, build-torch2/, is kept for the next run).
ringdp_torch2_install() {
  exec {RINGDP_TORCH2_LOCK_FD}>"$RINGDP_TORCH2_LOCK"
  flock "$RINGDP_TORCH2_LOCK_FD"
  ringdp_step "pip install ringdp_torch into $RINGDP_TORCH2_VENV" \
    "read pip's and meson's lines above; 'rm -rf build-torch2' if it is stale"
  ringdp_log "building ringdp_torch for torch $RINGDP_TORCH2_VERSION: pip install --no-build-isolation . (into $RINGDP_TORCH2_VENV)"
  ringdp_logged "$RINGDP_TORCH2_VENV/bin/python" -m pip install --no-build-isolation --no-deps --force-reinstall \
    --disable-pip-version-check --root-user-action=ignore --config-settings=build-dir="$(pwd)/build-torch2" .
}

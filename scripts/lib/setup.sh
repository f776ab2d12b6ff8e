# Shared set-up for scripts/test and scripts/demo: Debian packages, PATH, meson configure.
# Sourced, not run. Everything here is idempotent and fast when there is nothing to do.

RINGDP_PACKAGES=(meson ninja-build pkg-config g++ python3 catch2 libopenblas-dev libopenmpi-dev
  openmpi-bin libcli11-dev nlohmann-json3-dev libfmt-dev zlib1g-dev procps)

ringdp_log() { printf 'ringdp: %s\n' "$*" >&2; }

# Installs whatever of RINGDP_PACKAGES is missing: one dpkg-query when all are present.
ringdp_ensure_packages() {
  local missing=() pkg installed
  # dpkg-query omits packages it has never heard of, so compare against the full list.
  installed=" $(dpkg-query -W -f='${db:Status-Status}:${Package} ' "${RINGDP_PACKAGES[@]}" 2>/dev/null) "
  for pkg in "${RINGDP_PACKAGES[@]}"; do
    [[ "$installed" == *" installed:$pkg "* ]] || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  ringdp_log "installing missing Debian packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { ringdp_log "error: need root or sudo to install ${missing[*]}"; return 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
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

# OpenMPI refuses root and more ranks than cores unless told; these machines need both.
ringdp_mpi_env() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1
  # Ranks on an oversubscribed node must yield while they wait, or they starve each other.
  export OMPI_MCA_mpi_yield_when_idle=1
}

# ringdp_configure BUILD_DIR [meson options...]: setup once, reconfigure only when options change.
ringdp_configure() {
  local dir=$1
  shift
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

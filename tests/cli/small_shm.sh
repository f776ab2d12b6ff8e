#!/usr/bin/env bash
# A /dev/shm too small for what the ranks place there (issue #48 item 6): the job is launched in
# a mount namespace of its own whose /dev/shm is a 16 MiB tmpfs, as a container's default
# --shm-size gives; MPI itself still starts there, ringdp's slots and shared buffers do not fit.
#   tests/cli/small_shm.sh CASE BUILD_DIR     (root: a mount namespace)
case_name=$1
build=$(cd "$2" && pwd)
source "$(dirname "$0")/common.sh"
train="$build/apps/train/ringdp-train"
bench="$build/apps/bench/ringdp-bench"

if [ "$(id -u)" -ne 0 ] || ! unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm' 2>/dev/null; then
  echo "SKIPPED: needs root and a mount namespace (unshare -m) for a small /dev/shm"
  exit 77
fi
# The launcher and every rank see the small /dev/shm; the machine's own is not touched.
real_mpiexec=$mpiexec
mpiexec="$work/in_small_shm"
cat >"$mpiexec" <<WRAP
#!/usr/bin/env bash
exec unshare -m bash -c 'mount -t tmpfs -o size=16m tmpfs /dev/shm && exec "\$@"' small-shm "$real_mpiexec" "\$@"
WRAP
chmod +x "$mpiexec"
# 8 MiB slots: two per rank, 32 MiB for two ranks, twice the room.
big_slots=$((8 << 20))

case "$case_name" in
  slots)
    RINGDP_SHM_SLOT_BYTES=$big_slots run_app "$train" 60 2 --epochs 1
    [ $rc -ne 0 ] || fail "slots larger than /dev/shm: exit 0: $out"
    for part in "error: /dev/shm has" "free, but ringdp's shared-memory slots" "RINGDP_SHM_SLOT_BYTES=$big_slots" \
      "for the 2 rank(s) on this host need about 32." "lower RINGDP_SHM_SLOT_BYTES" "RINGDP_SHM_MAX_BYTES=0"; do
      grep -qF -- "$part" <<<"$out" || fail "the error does not say '$part': $out"
    done
    ! grep -q "MPI_ERR_INTERN\|internal error" <<<"$out" || fail "MPI's internal error reached the user: $out"
    echo "ok: exit $rc in ${seconds}s: $(grep -m1 -o 'error: /dev/shm has .* there' <<<"$out")"
    ;;
  no-slots)
    # RINGDP_SHM_MAX_BYTES=0 means no shared-memory all-reduce: it must not ask for the slots.
    RINGDP_SHM_SLOT_BYTES=$big_slots RINGDP_SHM_MAX_BYTES=0 run_app "$train" 60 2 --epochs 1
    [ $rc -eq 0 ] || fail "RINGDP_SHM_MAX_BYTES=0 in a small /dev/shm: exit $rc: $out"
    grep -q "Finished training" <<<"$out" || fail "RINGDP_SHM_MAX_BYTES=0: no training: $out"
    echo "ok: RINGDP_SHM_MAX_BYTES=0 trains in a 16 MiB /dev/shm with 8 MiB slots asked for"
    ;;
  shared-buffers)
    # Small slots (a ring of 130 KiB a rank), so that they fit beside the MPI's own files (MPICH
    # takes half the 16 MiB) and the buffers are what does not.
    RINGDP_SHM_SLOT_BYTES=4096 run_app "$bench" 60 2 --buffers shared -b 8M -e 8M -n 2 -w 1
    [ $rc -ne 0 ] || fail "shared buffers larger than /dev/shm: exit 0: $out"
    for part in "error: /dev/shm has" "allocate_shared of shape [8388608] uint8" "leave out --buffers shared"; do
      grep -qF -- "$part" <<<"$out" || fail "the error does not say '$part': $out"
    done
    ! grep -q 'MPI call `rc`' <<<"$out" || fail "the error names a local variable: $out"
    echo "ok: exit $rc in ${seconds}s, naming /dev/shm and --buffers shared"
    ;;
  *) fail "unknown case '$case_name'" ;;
esac

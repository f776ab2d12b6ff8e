#!/usr/bin/env bash
# Run HERE (the Debian machine), before a device session: downloads the Debian packages the GPU
# machine lacks (it has nvcc, meson and ninja but no Catch2, OpenBLAS, CLI11, nlohmann-json or
# pkg-config, and no registry access) into .device-deps/, which git ignores and the device tool
# carries:  run(command="tests/gpu/device_check.sh", carry=[".device-deps"])
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .device-deps
cd .device-deps
apt-get download catch2 libopenblas-dev libopenblas0-pthread libopenblas-pthread-dev libgfortran5 \
  libcli11-dev nlohmann-json3-dev pkgconf pkgconf-bin libpkgconf3 zlib1g-dev 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
ls -la
du -sh .

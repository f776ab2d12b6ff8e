#!/usr/bin/env bash
# The torch2 suite: a torch-suite script on PyTorch 2.x, with the Python RINGDP_TORCH2_PYTHON names
# (scripts/test --torch2 makes a venv with PyPI's torch and pip-installs ringdp_torch into it, as
# docs/torch.md tells users to, then sets it). Skips without it.
#   tests/torch/torch2.sh SCRIPT.sh [ARGS...]
set -uo pipefail
if [ -z "${RINGDP_TORCH2_PYTHON:-}" ]; then
  echo "SKIPPED: no PyTorch 2.x Python named (RINGDP_TORCH2_PYTHON; scripts/test --torch2 makes one)"
  exit 77
fi
if ! out=$("$RINGDP_TORCH2_PYTHON" -c 'import ringdp_torch' 2>&1); then
  echo "FAIL: $RINGDP_TORCH2_PYTHON cannot import ringdp_torch (pip install --no-build-isolation . into it): $out"
  exit 1
fi
export RINGDP_TORCH_PYTHON=$RINGDP_TORCH2_PYTHON
exec bash "$@"

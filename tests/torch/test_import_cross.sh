#!/usr/bin/env bash
# A module built for one torch imported into the other (issue #50 item 1): the build folder's,
# built for Debian's torch 1.13, into the PyTorch 2.x venv, and the venv's pip-installed one into
# Debian's /usr/bin/python3. Each must be an ImportError naming both torches and how to rebuild,
# never an abort or an undefined symbol (a 1.13 module aborted the 2.15 interpreter while the loader
# mapped it). Run by the torch2 suite (tests/torch/torch2.sh sets RINGDP_TORCH_PYTHON).
#   tests/torch/test_import_cross.sh BUILD_DIR
set -u
build=$1
venv_python=$RINGDP_TORCH_PYTHON
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$build/python/ringdp_torch/__init__.py" ] || { echo "SKIPPED: no ringdp_torch built for Debian's torch in $build"; exit 77; }
old=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)') || { echo "SKIPPED: no Debian torch"; exit 77; }
new=$("$venv_python" -c 'import torch; print(torch.__version__)')
installed=$("$venv_python" -c 'import ringdp_torch, os; print(os.path.dirname(ringdp_torch.__file__))')
# The installed package alone: the venv's site-packages would bring its torch along.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$installed" "$work/"
source "$(dirname "$0")/import_refused.sh"  # refused DIR PYTHON WANT...
refused "$build/python" "$venv_python" "built for torch $old" "has torch $new" "meson setup"
refused "$work" /usr/bin/python3 "built for torch $new" "has torch $old" "pip install --no-build-isolation"

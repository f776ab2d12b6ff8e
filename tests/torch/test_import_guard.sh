#!/usr/bin/env bash
# `import ringdp_torch` in a Python or a torch other than the ones the compiled module was built
# for must raise an ImportError naming both, never load the module (issue #50 item 1: a module
# built for Debian's torch 1.13 aborted the interpreter while the loader mapped it, in a venv with
# PyPI's torch 2.15). The package's __init__ checks first. Planted here: a copy of the build's
# package that says it was built for torch 2.15.0+cu132, one that says Python 3.99, and a Python
# without torch; then the real package must import and register "ringdp".
#   tests/torch/test_import_guard.sh BUILD_DIR
set -u
build=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
package="$build/python/ringdp_torch"
[ -f "$package/__init__.py" ] || { echo "SKIPPED: no ringdp_torch package in $build/python (built where torch is found)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# plant NAME SED: a copy of the package with its __init__ edited by SED, under $work/NAME.
plant() {
  mkdir -p "$work/$1"
  cp -r "$package" "$work/$1/"
  sed -i "$2" "$work/$1/ringdp_torch/__init__.py"
}
source "$(dirname "$0")/import_refused.sh"  # refused DIR PYTHON WANT...

torch_version=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)')
plant other-torch 's/^BUILT_FOR_TORCH = .*/BUILT_FOR_TORCH = "2.15.0+cu132"/'
refused "$work/other-torch" /usr/bin/python3 "built for torch 2.15.0+cu132" "has torch $torch_version" "/usr/bin/python3"
plant other-python 's/^BUILT_FOR_PYTHON = .*/BUILT_FOR_PYTHON = "3.99"/'
refused "$work/other-python" /usr/bin/python3 "built for Python 3.99" "this is Python 3."
/usr/bin/python3 -m venv --without-pip "$work/venv" || fail "python3 -m venv failed"
refused "$build/python" "$work/venv/bin/python" "cannot import torch" "needs torch $torch_version"

out=$(PYTHONPATH="$build/python" /usr/bin/python3 -c 'import ringdp_torch, torch.distributed as dist
print("registered" if hasattr(dist.Backend, "RINGDP") else "not registered", ringdp_torch.BUILT_FOR_TORCH)' 2>&1) ||
  fail "the real package does not import: $out"
[ "$out" = "registered $torch_version" ] || fail "the real package: $out"
echo "ok: the real package imports with torch $torch_version and registers ringdp"

# Sourced by the torch suite's scripts: which Python runs the ranks, and where it finds ringdp_torch.
# Debian's /usr/bin/python3 with the module of the build folder (PYTHONPATH=BUILD/python) by
# default; RINGDP_TORCH_PYTHON names another (the PyTorch 2.x venv of scripts/test, which has
# ringdp_torch pip-installed: the build folder's module, built for Debian's torch, stays off its
# path). Skips (77) where that Python lacks torch with gloo. Set $build first.
python=${RINGDP_TORCH_PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  echo "SKIPPED: no $python with torch and gloo (apt-get install python3-torch)"
  exit 77
fi
if [ -z "${RINGDP_TORCH_PYTHON:-}" ]; then
  export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
fi

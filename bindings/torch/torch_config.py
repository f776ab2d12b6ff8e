"""Prints what building the torch backend needs, one `key<TAB>value` per line, from the Python that
runs it (meson runs /usr/bin/python3: the python3 first on PATH may be a pyenv one without
Debian's torch). Exit 1 with the reason on stderr when torch cannot be imported."""
import os
import sys
import sysconfig

try:
    import torch
    import torch._C as C
    import torch.distributed as dist
    from torch.utils import cpp_extension
except Exception as e:  # any import failure means: no torch backend, say why
    sys.exit(f"cannot import torch with {sys.executable}: {e}")
if not dist.is_available():
    sys.exit(f"torch {torch.__version__} was built without torch.distributed")

# pybind11 shares types between modules only when these match torch's own (else Python cannot see
# the returned ProcessGroup as torch's class).
defines = [f'-DPYBIND11_{name}="{getattr(C, "_PYBIND11_" + name)}"'
           for name in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI") if getattr(C, "_PYBIND11_" + name, None)]
print("version\t" + torch.__version__)
# include_paths() names TH and THC folders that Debian does not ship.
includes = [d for d in cpp_extension.include_paths() + [sysconfig.get_paths()["include"]] if os.path.isdir(d)]
print("includes\t" + ";".join(includes))
print("libdirs\t" + ";".join(cpp_extension.library_paths()))
print("cxx11_abi\t" + str(int(C._GLIBCXX_USE_CXX11_ABI)))
print("defines\t" + ";".join(defines))
print("suffix\t" + sysconfig.get_config_var("EXT_SUFFIX"))
print("pyver\t" + sysconfig.get_python_version())
# The CUDA torch was built with ("none" for a CPU-only torch): CUDA tensors through the backend need it.
print("cuda\t" + (torch.version.cuda or "none"))

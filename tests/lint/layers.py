"""The layering of DESIGN.md, checked on the sources: no file includes a layer above its own.

Layers, bottom to top: core < kernels < tensor < autograd, comm (peers: neither includes the
other) < comm/ddp < apps < perf, examples, tests (the top, which may include anything). Inside
comm, by folder (README.md's layout table): its public words (types, work, options, position,
job, the algorithm tables, RefusedAlike: comm/ itself) < bootstrap/ (the job's runtime) < transport/ (its kinds in subfolders, one
layer) < algorithms/ < world/ (discovery, routes, departures) < execution/ < the front door
(comm/communicator.h and the files that implement it); every one of them a peer of autograd. The test
doubles (tests/doubles/) are test code: product code, everything outside tests/, never includes
them; it reaches them only through the real headers they shadow (<cuda_runtime.h>, <nccl.h>).
The Meson libraries enforce the link order, but a header-only include crosses a layer unseen by
the linker, hence this reading of every #include "...".

Usage: layers.py SOURCE_ROOT     fails naming file:line, the included file and both layers
       layers.py --self-test     plants forbidden includes in a small tree and expects each named
"""
import pathlib
import re
import subprocess
import sys
import tempfile

# folder prefix -> (layer, rank); the longest prefix wins, so comm/ddp/ is not comm/.
# A whole file's path counts as a prefix too: comm/'s front door shares its folder with the public
# words below everything else in comm.
FRONT_DOOR = ["comm/communicator.h", "comm/communicator_state.h", "comm/communicator.cpp",
              "comm/collectives.cpp", "comm/block_collectives.cpp", "comm/point_to_point.cpp",
              "comm/collective_checks.h", "comm/collective_checks.cpp"]
LAYERS = {
    "core": ("core", 0),
    "kernels": ("kernels", 1),
    "tensor": ("tensor", 2),
    "autograd": ("autograd", 3),
    "comm": ("comm", 3),
    "comm/bootstrap": ("comm/bootstrap", 4),
    "comm/transport": ("comm/transport", 5),
    "comm/algorithms": ("comm/algorithms", 6),
    "comm/world": ("comm/world", 7),
    "comm/execution": ("comm/execution", 8),
    **{path: ("comm's front door", 9) for path in FRONT_DOOR},
    "comm/ddp": ("comm/ddp", 10),
    "apps": ("apps", 11),
    "bindings": ("bindings", 11),
    "perf": ("perf", 12),
    "examples": ("examples", 12),
    "tests": ("tests", 12),
    "tests/doubles": ("doubles", 12),
}
TOP = 12
# Layers that never include each other whatever their ranks: the tensor-and-autograd side and the
# communication side meet only in comm/ddp.
PEERS = [{"autograd"}, {"comm", "comm/bootstrap", "comm/transport", "comm/algorithms", "comm/world",
                        "comm/execution", "comm's front door"}]
DOUBLES = "doubles"
# The files read: every layer below the top, the top's product code, and the doubles themselves.
SCANNED = ["core", "kernels", "tensor", "autograd", "comm", "apps", "bindings", "perf", "examples",
           "tests/doubles"]
GENERATED = {"config.h"}  # written into the build root by meson; anyone may include it
SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(relative):
    """The (layer, rank) of a path relative to the root, or None outside every layer."""
    parts = pathlib.PurePosixPath(relative).parts
    for n in range(len(parts), 0, -1):
        found = LAYERS.get("/".join(parts[:n]))
        if found:
            return found
    return None


def resolve(root, path, bracket, name):
    """The included file relative to root, searched as the compiler does: a quoted name beside the
    includer first, then from the root; None for a file outside the tree (a system header)."""
    beside = path.parent / name
    if bracket == '"' and beside.is_file():
        return beside.resolve().relative_to(root.resolve()).as_posix()
    return name if (root / name).is_file() else None


def refuse(layer, rank, product, to_layer, to_rank):
    """Why a file of `layer` may not include one of `to_layer`, or None when it may."""
    if product and to_layer == DOUBLES:
        return (f"product code (layer {layer}) may not include a test double (layer {to_layer}); "
                "include the real header it shadows")
    if rank == TOP or to_layer == layer:
        return None
    if layer in PEERS[0] and to_layer in PEERS[1] or layer in PEERS[1] and to_layer in PEERS[0]:
        return f"layer {layer} may not include its peer layer {to_layer}"
    if to_rank < rank:
        return None
    if to_rank == rank:
        return f"layer {layer} may not include its peer layer {to_layer}"
    return f"layer {layer} may not include layer {to_layer}, which is above it"


def problems_in(root):
    root = pathlib.Path(root)
    problems = []
    for folder in SCANNED:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            source = path.relative_to(root).as_posix()
            layer, rank = layer_of(source)
            product = not source.startswith("tests/")
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                bracket, name = match.groups()
                target = resolve(root, path, bracket, name)
                if target is None:
                    if bracket == '"' and name not in GENERATED:
                        problems.append(f'{source}:{number}: includes "{name}", which is no '
                                        "file of the tree (includes are written from the root)")
                    continue
                refusal = refuse(layer, rank, product, *(layer_of(target) or ("(none)", TOP)))
                if refusal:
                    problems.append(f'{source}:{number}: includes "{name}": {refusal}')
    return problems


def main(root):
    problems = problems_in(root)
    for problem in problems:
        print(problem)
    print(f"{len(problems)} include(s) against the layering (tests/lint/layers.py)")
    return 1 if problems else 0


# A tree with one file per layer, each including every layer it may (so a rule too strict fails
# the clean run), and the includes the lint must refuse, planted one per line afterwards.
CLEAN_TREE = {
    "core/error.h": ['"config.h"'],
    "kernels/relu.h": ['"core/error.h"'],
    "tensor/tensor.h": ['"kernels/relu.h"', '"core/error.h"'],
    "autograd/module.h": ['"tensor/tensor.h"'],
    "autograd/optim/sgd.h": ['"autograd/module.h"'],
    "comm/types.h": ['"tensor/tensor.h"'],
    "comm/bootstrap/runtime.h": ['"comm/types.h"'],
    "comm/bootstrap/exchange.h": ['"comm/bootstrap/runtime.h"'],
    "comm/transport/transport.h": ['"comm/bootstrap/runtime.h"', '"comm/types.h"'],
    "comm/transport/mpi/mpi.h": ['"comm/transport/transport.h"', '"comm/transport/shm/slots.h"'],
    "comm/transport/shm/slots.h": ['"comm/transport/transport.h"'],
    "comm/algorithms/ring.h": ['"comm/transport/mpi/mpi.h"'],
    "comm/world/routes.h": ['"comm/algorithms/ring.h"'],
    "comm/algorithms/tree.h": ['"comm/algorithms/ring.h"', '"comm/transport/transport.h"'],
    "comm/execution/executor.h": ['"comm/world/routes.h"'],
    "comm/communicator.h": ['"comm/execution/executor.h"', '"tensor/tensor.h"', "<cuda_runtime.h>", "<nccl.h>"],
    "comm/ddp/ddp.h": ['"comm/communicator.h"', '"autograd/module.h"'],
    "apps/train/main.cpp": ['"comm/ddp/ddp.h"', '"apps/train/trainer.h"'],
    "apps/train/trainer.h": ['"autograd/optim/sgd.h"'],
    "perf/bench.cpp": ['"apps/train/trainer.h"'],
    "examples/hello.cpp": ['"comm/communicator.h"'],
    "tests/doubles/cuda/cuda_emu.h": ['"core/error.h"'],
    "tests/doubles/cuda/include/cuda_runtime.h": ['"tests/doubles/cuda/cuda_emu.h"'],
    "tests/doubles/nccl/nccl.h": ["<cuda_runtime.h>"],
    "tests/doubles/nccl/nccl_emu.cpp": ['"nccl.h"', '"comm/communicator.h"'],
    "tests/unit/test_tensor.cpp": ['"tests/doubles/cuda/cuda_emu.h"', '"comm/ddp/ddp.h"'],
}
PLANTED = {
    "kernels/relu.h": ('"tensor/tensor.h"', "layer kernels may not include layer tensor"),
    "comm/communicator.h": ('"tests/doubles/cuda/cuda_emu.h"',
                            "product code (layer comm's front door) may not include a test double"),
    "autograd/module.h": ('"comm/communicator.h"',
                          "layer autograd may not include its peer layer comm's front door"),
    "comm/types.h": ('"comm/bootstrap/runtime.h"', "layer comm may not include layer comm/bootstrap"),
    "comm/bootstrap/exchange.h": ('"comm/transport/transport.h"',
                                  "layer comm/bootstrap may not include layer comm/transport"),
    "comm/algorithms/tree.h": ('"comm/world/routes.h"', "layer comm/algorithms may not include layer comm/world"),
    "comm/transport/shm/slots.h": ('"comm/algorithms/ring.h"',
                                   "layer comm/transport may not include layer comm/algorithms"),
    "comm/algorithms/ring.h": ('"autograd/module.h"',
                               "layer comm/algorithms may not include its peer layer autograd"),
    "comm/world/routes.h": ('"comm/execution/executor.h"',
                            "layer comm/world may not include layer comm/execution"),
    "comm/execution/executor.h": ('"comm/communicator.h"',
                                  "layer comm/execution may not include layer comm's front door"),
    "comm/ddp/ddp.h": ('"apps/train/trainer.h"', "layer comm/ddp may not include layer apps"),
    "examples/hello.cpp": ('"tests/doubles/nccl/nccl.h"',
                           "product code (layer examples) may not include a test double"),
    "tensor/tensor.h": ('"tensor/missing.h"', "which is no file of the tree"),
}


def write_tree(root, planted):
    for relative, includes in CLEAN_TREE.items():
        lines = [f"// {relative}"] + [f"#include {name}" for name in includes]
        if planted and relative in PLANTED:
            lines.append(f"#include {PLANTED[relative][0]}")
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def self_test():
    failures = []
    for planted in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            write_tree(pathlib.Path(tmp), planted)
            run = subprocess.run([sys.executable, __file__, tmp], capture_output=True, text=True)
        label = "planted" if planted else "clean"
        print(f"--- {label} tree: exit {run.returncode}\n{run.stdout}", end="")
        lines = run.stdout.splitlines()[:-1]
        if not planted:
            if run.returncode != 0 or lines:
                failures.append("the clean tree failed")
            continue
        if run.returncode != 1:
            failures.append(f"the planted tree exited {run.returncode}, not 1")
        for relative, (name, words) in PLANTED.items():
            line = len(CLEAN_TREE[relative]) + 2  # the heading comment, the includes, the plant
            where = f"{relative}:{line}: includes {name}"
            if not any(l.startswith(where) and words in l for l in lines):
                failures.append(f"not named: {where} ({words})")
        if len(lines) != len(PLANTED):
            failures.append(f"{len(lines)} problems reported for {len(PLANTED)} planted")
    for failure in failures:
        print(f"SELF-TEST FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))

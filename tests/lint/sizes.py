"""No product file over ~400 lines, no function over ~80: the sizes a newcomer can read at once.
And one class, one file: a class's out-of-line methods sit in one source file of its folder, so
moving methods into a sibling file (which shares the class's state, and so is no split) does not
get a big class under the file limit; a split makes a class of its own. A class allowed to spread
is named in SPREAD_BY_DESIGN with its reason, and its methods together stay under the cap given
there.

Product code is every folder but tests/ (core kernels tensor autograd comm apps bindings perf examples).
Functions are found as the house style writes them: a definition that starts at column 0 and
opens its body on the same line, ending at the next line that starts with '}' (namespaces are not
indented here, so that is the function's own). Usage: sizes.py SOURCE_ROOT [--self-test]
"""
import pathlib
import re
import sys
import tempfile

FOLDERS = ["core", "kernels", "tensor", "autograd", "comm", "apps", "bindings", "perf", "examples"]
SUFFIXES = {".h", ".cpp", ".cu", ".cuh"}
MAX_FILE_LINES = 450  # "about 400": a file may run a little over while it holds one concept
MAX_FUNCTION_LINES = 80
# Classes whose methods may sit in more than one file of their folder: (folder, class) -> (cap on
# the lines of all its methods together, why).
SPREAD_BY_DESIGN = {
    ("comm", "Communicator"): (
        580, "the front door: one method per collective and variant (about 40), each beside the argument "
        "checks and descriptors of its family (collectives.cpp, block_collectives.cpp, point_to_point.cpp); "
        "its state is behind one pointer (communicator_state.h)"),
}
# A method defined outside its class: `Type Class::name(` at column 0, the body opening on this line
# or a later one (a signature may wrap).
QUALIFIED = re.compile(r"^(?:[^(/#\s][^(]*?[\s*&])?((?:\w+::)+)(?:~?\w+|operator\W+)\(")
DECLARED = re.compile(r"^\s*(?:class|struct)\s+(\w+)\b[^;]*$", re.M)
DEFINITION = re.compile(r"^[A-Za-z_].*\)\s*(const\s*)?(noexcept\s*)?(->\s*[\w:<>&* ]+\s*)?\{\s*$")


def problems(root):
    found = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SUFFIXES:
                continue
            lines = path.read_text(encoding="utf-8").splitlines()
            name = path.relative_to(root)
            if len(lines) > MAX_FILE_LINES:
                found.append(f"{name}: {len(lines)} lines (at most about {MAX_FILE_LINES - 50}): split it by concept")
            i = 0
            while i < len(lines):
                if DEFINITION.match(lines[i]):
                    end = i + 1
                    while end < len(lines) and not lines[end].startswith("}"):
                        end += 1
                    if end - i + 1 > MAX_FUNCTION_LINES:
                        found.append(f"{name}:{i + 1}: a function of {end - i + 1} lines (at most "
                                     f"{MAX_FUNCTION_LINES}): {lines[i].strip()[:80]}")
                    i = end
                i += 1
    return found


def sources(root):
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in SUFFIXES:
                yield path


def method_lines(root):
    """{(folder, class): {file: lines of its methods there}} for out-of-line methods in sources."""
    classes = set()
    for path in sources(root):
        classes.update(DECLARED.findall(path.read_text(encoding="utf-8")))
    found = {}
    for path in sources(root):
        if path.suffix not in {".cpp", ".cu"}:
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            match = QUALIFIED.match(lines[i])
            opens = i
            # The line the body opens on: `{` at its end, or a whole body `{ ... }` on it.
            while match and opens < len(lines) and not lines[opens].rstrip().endswith(("{", ";", "}")):
                opens += 1
            if not match or opens == len(lines) or lines[opens].rstrip().endswith(";"):
                i += 1
                continue
            end = opens  # a body on one line
            if not lines[opens].rstrip().endswith("}"):
                end += 1
                while end < len(lines) and not lines[end].startswith("}"):
                    end += 1
            # Namespaces qualify names too: only the declared classes among the qualifiers count.
            owner = "::".join(q for q in match.group(1).split("::") if q in classes)
            if owner:
                key = (str(path.parent.relative_to(root)), owner)
                per_file = found.setdefault(key, {})
                name = str(path.relative_to(root))
                per_file[name] = per_file.get(name, 0) + end - i + 1
            i = end + 1
    return found


def spread_classes(root):
    found = []
    for (folder, owner), per_file in sorted(method_lines(root).items()):
        total = sum(per_file.values())
        allowed = SPREAD_BY_DESIGN.get((folder, owner))
        if len(per_file) > 1 and not allowed:
            found.append(f"{folder}: class {owner}'s methods are spread over {', '.join(sorted(per_file))} "
                         f"({total} lines): one class, one file; a split gives the moved part its own class "
                         f"and state (or name it in SPREAD_BY_DESIGN with why)")
        if allowed and total > allowed[0]:
            found.append(f"{folder}: class {owner} has {total} lines of methods, over the {allowed[0]} "
                         f"SPREAD_BY_DESIGN allows it: split it into classes")
    return found


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "comm").mkdir()
        (root / "comm" / "short.cpp").write_text("int f(int x) {\n  return x;\n}\n")
        assert not problems(root), problems(root)
        body = "".join(f"  x += {k};\n" for k in range(85))
        (root / "comm" / "long.cpp").write_text("int g(int x) {\n" + body + "  return x;\n}\n")
        (root / "comm" / "big.h").write_text("// line\n" * 460)
        found = problems(root)
        assert any("comm/long.cpp:1: a function of 88 lines" in p for p in found), found
        assert any("comm/big.h: 460 lines" in p for p in found), found
        # The old DDP shape: the wrapper's methods in its file and in a sibling.
        (root / "comm" / "ddp").mkdir()
        (root / "comm" / "ddp" / "ddp.h").write_text("class Ddp {\n  void a();\n  void b();\n};\n")
        (root / "comm" / "ddp" / "ddp.cpp").write_text("void Ddp::a() {\n}\n")
        (root / "comm" / "ddp" / "unused.cpp").write_text("namespace x {\nvoid Ddp::b(\n    int y) {\n  y++;\n}\n}\n")
        spread = spread_classes(root)
        assert any("class Ddp's methods are spread over comm/ddp/ddp.cpp, comm/ddp/unused.cpp" in p
                   for p in spread), spread
        # A constructor and a one-line method count too; the method after a one-liner is its own.
        (root / "comm" / "ddp" / "unused.cpp").write_text(
            "Ddp::Ddp() {\n}\nint Ddp::one() const { return 1; }\n")
        spread = spread_classes(root)
        assert any("class Ddp's methods are spread" in p and "(5 lines)" in p for p in spread), spread
        # A namespace-qualified free function is not a class's method.
        (root / "comm" / "ddp" / "unused.cpp").write_text("void helpers::b() {\n}\n")
        assert not spread_classes(root), spread_classes(root)
        # An allowed class over its cap.
        (root / "comm" / "ddp" / "unused.cpp").write_text("void Ddp::b() {\n" + body + "}\n")
        SPREAD_BY_DESIGN[("comm/ddp", "Ddp")] = (50, "planted")
        spread = spread_classes(root)
        del SPREAD_BY_DESIGN[("comm/ddp", "Ddp")]
        assert any("class Ddp has 89 lines of methods, over the 50" in p for p in spread), spread
    print("sizes.py self-test: a planted 88-line function, a 460-line file, a class spread over two files "
          "and an allowed class over its cap are named")


def main():
    if "--self-test" in sys.argv:
        self_test()
        return 0
    root = pathlib.Path(sys.argv[1])
    found = problems(root) + spread_classes(root)
    for p in found:
        print(p)
    if found:
        print(f"{len(found)} size problem(s): files, functions or classes (tests/lint/sizes.py)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

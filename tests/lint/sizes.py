"""No product file over ~400 lines, no function over ~80: the sizes a newcomer can read at once.

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
    print("sizes.py self-test: a planted 88-line function and a 460-line file are both named")


def main():
    if "--self-test" in sys.argv:
        self_test()
        return 0
    found = problems(pathlib.Path(sys.argv[1]))
    for p in found:
        print(p)
    if found:
        print(f"{len(found)} file(s) or function(s) too long (tests/lint/sizes.py)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

"""Include what you use, for the standard names whose headers compilers stop pulling in.

g++ 12's libstdc++ reaches <cstdint> through <string>; g++ 13's does not, and ringdp's first build
on the GPU machine (g++ 13) would have stopped at core/device.h's `uint8_t`. A build here cannot
see that, so this check reads the sources: a file that names one of these must include its header
itself or through ringdp's own headers (whose includes we control), never only through another
standard header. Usage: includes.py SOURCE_ROOT
"""
import pathlib
import re
import sys

# name pattern -> the standard header that declares it
RULES = {
    r"\b(std::)?u?int(8|16|32|64)_t\b": "cstdint",
    r"\bstd::(vector)\b": "vector",
    r"\bstd::(string)\b": "string",
    r"\bstd::(string_view)\b": "string_view",
    r"\bstd::(unique_ptr|shared_ptr|make_unique|make_shared)\b": "memory",
    r"\bstd::(function)\b": "functional",
    r"\bstd::(optional|nullopt)\b": "optional",
    r"\bstd::(array)\b": "array",
    r"\bstd::(span)\b": "span",
    r"\bstd::(mutex|lock_guard|unique_lock)\b": "mutex",
    r"\bstd::(condition_variable)\b": "condition_variable",
    r"\bstd::(atomic)\b": "atomic",
    r"\bstd::(thread)\b": "thread",
    r"\bstd::(map)\b": "map",
    r"\bstd::(unordered_map)\b": "unordered_map",
    r"\bstd::(deque)\b": "deque",
    r"\bstd::(pair)\b": "utility",
}
FOLDERS = ["core", "kernels", "tensor", "autograd", "comm", "apps", "bindings", "tests", "bench"]
SUFFIXES = {".h", ".cpp", ".cu", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/|\"(\\.|[^\"\\\n])*\"", re.S)


def includes(path):
    return set(INCLUDE.findall(path.read_text(encoding="utf-8"))) if path.exists() else set()


def reachable(root, path, seen=None):
    """Every include of path, following ringdp's own headers (quoted, from the root or beside it)."""
    seen = set() if seen is None else seen
    found = set()
    for name in includes(path):
        found.add(name)
        for candidate in (root / name, path.parent / name):
            if candidate.suffix in SUFFIXES and candidate.exists() and candidate not in seen:
                seen.add(candidate)
                found |= reachable(root, candidate, seen)
    return found


def main(root):
    root = pathlib.Path(root)
    problems = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SUFFIXES or "build" in path.relative_to(root).parts[:1]:
                continue
            code = COMMENT.sub(" ", path.read_text(encoding="utf-8"))
            have = reachable(root, path)
            for pattern, header in RULES.items():
                match = re.search(pattern, code)
                if match and header not in have:
                    line = code[: match.start()].count("\n") + 1
                    problems.append(f"{path.relative_to(root)}:{line}: uses {match.group(0)} without #include <{header}>")
    for problem in problems:
        print(problem)
    print(f"{len(problems)} missing standard includes")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))

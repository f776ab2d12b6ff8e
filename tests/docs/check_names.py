"""Every `Type::member` a page names in code spans exists in the sources (issue #49 item 5: a
rename left docs/walkthrough.md naming Communicator::submit and ::execute after they moved).
A name whose Type (a class, struct, enum or namespace) is not defined in ringdp's sources is
another project's (ProcessGroupGloo::runLoop) and is not checked. A member exists when the sources
spell `Type::member` (a definition, a call, an enumerator's use) or a file that defines Type
declares `member` (not a call through another object, as `executor_.submit(`).
    check_names.py SOURCE_ROOT PAGE..."""
import pathlib
import re
import sys

SOURCE_DIRS = ["core", "tensor", "autograd", "kernels", "comm", "apps", "bindings", "perf", "examples", "tests/support",
               "tests/doubles"]
SUFFIXES = {".h", ".cpp", ".cu", ".cuh", ".py"}
SPAN = re.compile(r"`([^`\n]+)`")
# The last two parts of a qualified name: `comm::Work::then` is Work's member `then`.
NAME = re.compile(r"\b((?:[A-Za-z_][A-Za-z0-9_]*::)+)([A-Za-z_~][A-Za-z0-9_]*)")
DEFINES = r"\b(?:class|struct|enum(?:\s+class)?|union)\s+{0}\b|\bnamespace\s+(?:\w+::)*{0}\b"


def sources(root):
    files = {}
    for folder in SOURCE_DIRS:
        for path in (root / folder).rglob("*"):
            if path.suffix in SUFFIXES and path.is_file():
                files[path] = path.read_text(errors="replace")
    return files


def check(root, pages):
    files = sources(root)
    everything = "\n".join(files.values())
    definers = {}
    problems = []
    for page in pages:
        text = (root / page).read_text()
        for number, line in enumerate(text.splitlines(), 1):
            for span in SPAN.findall(line):
                for prefix, member in NAME.findall(span):
                    owner = prefix[:-2].split("::")[-1]
                    if owner not in definers:
                        pattern = re.compile(DEFINES.format(re.escape(owner)))
                        definers[owner] = [t for t in files.values() if pattern.search(t)]
                    if not definers[owner]:
                        continue  # not ringdp's
                    if re.search(rf"\b{re.escape(owner)}::{re.escape(member)}\b", everything):
                        continue
                    # Declared there: not a call through another object (executor_.submit(...)).
                    declared = re.compile(rf"(?<![.>:\w]){re.escape(member)}\s*[(;={{,]")
                    if any(declared.search(t) for t in definers[owner]):
                        continue
                    problems.append(f"{page}:{number}: `{owner}::{member}` names no member of ringdp's {owner}")
    return problems


if __name__ == "__main__":
    root = pathlib.Path(sys.argv[1])
    problems = check(root, sys.argv[2:])
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"ok: every Type::member named on {len(sys.argv) - 2} pages exists in the sources")

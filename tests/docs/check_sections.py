"""Every reference to a page's section, written `docs/PAGE.md, "Heading"` (in a page, a comment or
a script), names a heading (or a paragraph's bold label) that page has, one that starts with the quoted words (issue #49 item
6: the dated measurements moved from docs/benchmarks.md to docs/lab/benchmarks.md, and the
references had to follow them).
    check_sections.py SOURCE_ROOT"""
import pathlib
import re
import sys

SUFFIXES = {".md", ".h", ".cpp", ".cu", ".py", ".sh", ".build", ".txt"}
SKIP = {"build", "build-mpich", "build-tsan", "build-asan", "build-minimal", ".git", "subprojects"}
REFERENCE = re.compile(r"((?:docs/)?(?:lab/)?[A-Za-z0-9_-]+\.md)\)?[,:]? [\"“]([^\"”\n]{3,80})[\"”]")
# A heading, or a paragraph's bold label (docs/library.md's "**Shared allocations.** ...").
HEADING = re.compile(r"^(?:#{1,6} +(.*)|\*\*([^*\n]+?)\.?\*\*)", re.M)


def headings(root, page):
    for candidate in (root / page, root / "docs" / page):
        if candidate.is_file():
            return [(h or label).strip() for h, label in HEADING.findall(candidate.read_text())]
    return None


def main(root):
    problems, checked = [], 0
    for path in root.rglob("*"):
        if not path.is_file() or path.suffix not in SUFFIXES or SKIP & set(path.relative_to(root).parts):
            continue
        text = path.read_text(errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for page, quoted in REFERENCE.findall(line):
                found = headings(root, page)
                if found is None:
                    continue  # not one of ours (or a name in prose)
                checked += 1
                words = quoted.rstrip(".,;: ")
                if not any(h.startswith(words) for h in found):
                    problems.append(f"{path.relative_to(root)}:{number}: {page} has no section \"{words}\"")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"ok: {checked} references to a page's section name a section it has")
    return 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1])))

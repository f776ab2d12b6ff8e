"""Prints the ninja targets that the tests of the named suites need, one per line, from a build
folder's introspection files: suite_targets.py BUILD SUITE [SUITE ...].

Why: a sanitizer build runs three suites, yet `ninja` alone would also compile perf/, most of the
apps and (MPICH pass) the unit and emulator tests, which none of those suites runs.
`meson test` without --no-rebuild would build the same set, but its compiler errors would land in
the test log instead of in front of the reader. A test's depends hold its executable, the build
targets in its arguments and its depends: keyword; a test that calls a program by path alone is
not covered, and must name the program in depends: (in a fresh folder it then fails with "not
found"; in a reused one it would run an old build).
"""
import json
import os
import sys


def load(build, name):
    with open(os.path.join(build, "meson-info", f"intro-{name}.json"), encoding="utf-8") as f:
        return json.load(f)


def main(argv):
    if len(argv) < 3:
        print("usage: suite_targets.py BUILD SUITE [SUITE ...]", file=sys.stderr)
        return 2
    build, suites = argv[1], set(argv[2:])
    files = {t["id"]: t["filename"] for t in load(build, "targets")}
    wanted = set()
    matched = 0
    for test in load(build, "tests"):
        # meson lists suites as "project:suite" (ringdp:unit); --suite takes the bare name.
        if not suites.intersection(s.split(":")[-1] for s in test["suite"]):
            continue
        matched += 1
        for dep in test["depends"]:
            for path in files[dep]:
                wanted.add(os.path.relpath(path, build))
    if matched == 0:
        print(f"suite_targets.py: no test in {build} belongs to {sorted(suites)}", file=sys.stderr)
        return 1
    # Nothing at all when no target is wanted: an empty line would reach ninja as an empty target.
    for target in sorted(wanted):
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Prints the ninja targets that the tests of the named suites need, one per line, from a build
folder's introspection files: suite_targets.py BUILD SUITE [SUITE ...].

Why: a sanitizer build runs three suites, yet `ninja` alone would also compile the apps, perf/
and the torch bindings that none of those suites touches (about a third of CI's compile time).
`meson test` without --no-rebuild would build the same set, but its compiler errors would land in
the test log instead of in front of the reader. A test's depends hold its executable, the build
targets in its arguments and its depends: keyword, so a test that calls a program by path alone
is not covered: such a test fails with "not found", never passes by accident.
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
        # meson names a subproject's suites "project:suite"; ours carry the bare name too.
        if not suites.intersection(s.split(":")[-1] for s in test["suite"]):
            continue
        matched += 1
        for dep in test["depends"]:
            for path in files[dep]:
                wanted.add(os.path.relpath(path, build))
    if matched == 0:
        print(f"suite_targets.py: no test in {build} belongs to {sorted(suites)}", file=sys.stderr)
        return 1
    print("\n".join(sorted(wanted)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

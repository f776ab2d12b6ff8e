#!/usr/bin/python3
"""Runs the command blocks of one documentation page and compares their output with the page.

Usage: run_docs.py BUILD_DIR SOURCE_DIR PAGE.md     (one page: one meson test, suite 'docs')
       run_docs.py --patched BUILD_DIR SOURCE_DIR PAGE.md
                                                    (only the blocks with patch=: tests/docs/exercises.sh)
       run_docs.py --self-test                      (planted mismatches must fail)
       run_docs.py --listed SOURCE_DIR PAGE.md...   (every docs/*.md has its test)

A block takes part when the line before its opening fence is a marker, an HTML comment that
renders as nothing:

    <!-- docs-test: run [match=quoted|unordered|exact] [timeout=SECONDS] [patch=FILE] [needs=WHAT] -->
    <!-- docs-test: skip: REASON -->
    <!-- docs-test: file NAME -->

`file NAME` writes the block's text, as shown, to NAME in the page's scratch folder, for the
commands of later blocks to run: a program a page shows whole is run as a reader would paste it.
`needs=torch` skips the block, saying why, where Debian's python3-torch (with gloo) is missing;
NEEDS below lists what can be needed.
`patch=FILE` (a path in the source tree) marks a block that shows a planted change: the exercises'.
Such a block runs only with --patched, against a scratch copy of the sources that the runner
patches (`patch -p1`) before the block and restores after it; the block's own commands rebuild
what they need (`$ ninja -C build ...`). A plain run lists it as skipped.

Inside the block, a line that starts with `$ ` is a command (a trailing backslash continues it on
the next line); the lines after it, up to the next command, are what the page says it prints.
`match=quoted` (the default) requires the shown lines to appear in the output in the shown order,
other lines may come between them: a page quotes the lines it explains. `match=unordered` drops
the order, for lines that several ranks print as they please. `match=exact` requires the
output to be the shown lines and nothing else. In a shown line, `…` stands for any text (a time,
an address, a path) and `<n>` for one number; everything else must match as written, apart from
leading and trailing spaces (a right-aligned time is one column wider from 100 ms on). A
command's exit status must be 0 unless the page shows it on a line of its own, `[exit N]`, after
the command's lines.

Each command runs under bash in a fresh folder holding links to the source tree's top-level
entries and `build` -> BUILD_DIR, so the page's paths (`build/apps/train/ringdp-train`,
`scripts/...`) work as written in a checkout; BUILD is set to BUILD_DIR for the perf scripts. The
runner sets Open MPI's settings for this machine kind (root, more ranks than cores), as
tests/cli/common.sh does, so a page's `mpirun` line reads as a user types it.

The runner is stdlib-only (/usr/bin/python3) and reports each mismatch as PAGE:LINE with what the
page shows and what the run printed.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^\s*(```+|~~~+)")
EXIT_LINE = re.compile(r"^\[exit (\d+)\]$")
# needs=NAME: a check that must pass, and what to install when it does not.
NEEDS = {
    "torch": (["/usr/bin/python3", "-c",
               "import torch.distributed as d; assert d.is_gloo_available()"],
              "needs python3-torch with gloo (apt-get install python3-torch)"),
    "torch2": (["sh", "-c", 'test -n "$RINGDP_TORCH2_PYTHON" && "$RINGDP_TORCH2_PYTHON" -c "import ringdp_torch"'],
               "needs the PyTorch 2.x venv with ringdp_torch: scripts/test --torch2 makes it and names its "
               "Python in RINGDP_TORCH2_PYTHON"),
    "matplotlib": (["/usr/bin/python3", "-c", "import matplotlib"],
                   "needs python3-matplotlib (apt-get install python3-matplotlib)"),
}
NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


class Block:
    """One marked fenced block: its commands, each with the shown lines and the expected status."""

    def __init__(self, page, marker_line, options):
        self.page = page
        self.marker_line = marker_line
        self.options = options
        self.commands = []  # [line, command text, [(line, shown text)], expected exit status]
        self.text = ""  # a `file` block's contents


def parse_marker(text):
    if text.startswith("skip:"):
        return {"skip": text[len("skip:"):].strip() or "no reason given"}
    if text.split()[:1] == ["file"]:
        name = text[len("file"):].strip()
        if not re.fullmatch(r"[\w.-]+", name):
            raise ValueError("a docs-test file block names one file of the scratch folder, not '%s'" % name)
        return {"file": name}
    words = text.split()
    if not words or words[0] != "run":
        raise ValueError("a docs-test marker is 'run [options]' or 'skip: REASON', not '%s'" % text)
    options = {"match": "quoted", "timeout": "180"}
    for word in words[1:]:
        key, _, value = word.partition("=")
        if key not in ("match", "timeout", "patch", "needs") or not value:
            raise ValueError("unknown docs-test option '%s'" % word)
        options[key] = value
    if options.get("needs", "torch") not in NEEDS:
        raise ValueError("needs= is one of %s, not '%s'" % (", ".join(NEEDS), options["needs"]))
    if options["match"] not in ("quoted", "unordered", "exact"):
        raise ValueError("match= is quoted, unordered or exact, not '%s'" % options["match"])
    return options


def check_unmarked(path, lines, i):
    """The index after the unmarked block opening at i; one that holds a command is an error."""
    fence = FENCE.match(lines[i]).group(1)
    j = i + 1
    while j < len(lines) and not lines[j].strip().startswith(fence):
        if lines[j].startswith("$ "):
            raise ValueError("%s:%d: a command block with no docs-test marker before it: mark it "
                             "'run', or 'skip: REASON'" % (path, i + 1))
        j += 1
    return j + 1


def parse_page(path, text):
    """The marked blocks of a page, in order; a marker not followed by a fence, or a block of
    `$ ` commands with no marker, is an error."""
    lines = text.split("\n")
    blocks, i = [], 0
    while i < len(lines):
        found = MARKER.match(lines[i])
        if not found:
            i = check_unmarked(path, lines, i) if FENCE.match(lines[i]) else i + 1
            continue
        options = parse_marker(found.group(1))
        block = Block(path, i + 1, options)
        fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if not fence:
            raise ValueError("%s:%d: a docs-test marker must sit on the line before a ``` fence"
                             % (path, i + 1))
        i += 2
        if "file" in options:
            start = i
            while i < len(lines) and not lines[i].strip().startswith(fence.group(1)):
                i += 1
            block.text = "\n".join(lines[start:i]) + "\n"
            blocks.append(block)
            i += 1
            continue
        command = None
        while i < len(lines) and not lines[i].strip().startswith(fence.group(1)):
            line = lines[i]
            if command is not None and command[1].endswith("\\"):
                command[1] = command[1] + "\n" + line  # bash reads the backslash-newline
            elif line.startswith("$ "):
                command = [i + 1, line[2:], [], 0]
                block.commands.append(command)
            elif command is not None and EXIT_LINE.match(line.strip()):
                command[3] = int(EXIT_LINE.match(line.strip()).group(1))
            elif command is not None:
                command[2].append((i + 1, line))
            elif line.strip() and "skip" not in options:  # a skipped block may be any record
                raise ValueError("%s:%d: output before any '$ ' command in a docs-test block"
                                 % (path, i + 1))
            i += 1
        if "skip" not in options and not block.commands:
            raise ValueError("%s:%d: a docs-test block without a '$ ' command"
                             % (path, block.marker_line))
        blocks.append(block)
        i += 1
    return blocks


def shown_pattern(shown):
    """A shown line as a regex: `…` any text, `<n>` one number, the rest literal."""
    parts = re.split(r"(…|<n>)", shown.strip())
    regex = "".join(".*" if p == "…" else NUMBER if p == "<n>" else re.escape(p) for p in parts)
    return re.compile("^" + regex + "$")


def compare(shown, printed, match):
    """None when the output agrees with the page, else (line, shown, what came instead)."""
    printed = [line.strip() for line in printed]
    if match == "exact":
        for k, (line, text) in enumerate(shown):
            got = printed[k] if k < len(printed) else "(end of output)"
            if not shown_pattern(text).match(got):
                return line, text, got
        if len(printed) > len(shown):
            return (shown[-1][0] if shown else 0), "(end of output)", printed[len(shown)]
        return None
    if match == "unordered":
        for line, text in shown:
            if not any(shown_pattern(text).match(p) for p in printed):
                return line, text, "no such line in the output"
        return None
    position = 0
    for line, text in shown:
        pattern = shown_pattern(text)
        while position < len(printed) and not pattern.match(printed[position]):
            position += 1
        if position == len(printed):
            return line, text, "no such line after the previous quoted one"
        position += 1
    return None


def scratch_folder(build_dir, source_dir):
    folder = tempfile.mkdtemp(prefix="ringdp-docs-")
    source_dir = os.path.abspath(source_dir)
    for entry in os.listdir(source_dir):
        if entry not in ("build", ".git"):
            os.symlink(os.path.join(source_dir, entry), os.path.join(folder, entry))
    os.symlink(os.path.abspath(build_dir), os.path.join(folder, "build"))
    return folder


def command_environment(build_dir=None):
    env = dict(os.environ)
    if build_dir:  # the perf scripts read their build from BUILD (default build/)
        env["BUILD"] = os.path.abspath(build_dir)
    # Debian's python3 first: the pages' `python3` is the one python3-torch installs into.
    env["PATH"] = "/usr/bin:" + env.get("PATH", "")
    env.update({
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "OMPI_MCA_mpi_yield_when_idle": "1",
        "OMPI_MCA_hwloc_base_binding_policy": "none",
    })
    return env


def run_block(block, folder, env, report):
    failures = 0
    for line, command, shown, status in block.commands:
        # A session of its own, so that a timeout ends mpirun's ranks too, not only the shell.
        process = subprocess.Popen(["bash", "-o", "pipefail", "-c", command], cwd=folder, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out, _ = process.communicate(timeout=int(block.options["timeout"]))
            done = subprocess.CompletedProcess(process.args, process.returncode, out)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            report("%s:%d: '%s' did not finish within %s s"
                   % (block.page, line, command, block.options["timeout"]))
            failures += 1
            continue
        printed = done.stdout.decode("utf-8", "replace").split("\n")
        if printed and printed[-1] == "":
            printed.pop()
        wrong = compare(shown, printed, block.options["match"])
        if done.returncode != status:
            report("%s:%d: '%s' exited %d, the page expects %d"
                   % (block.page, line, command, done.returncode, status))
        if wrong:
            report("%s:%d: '%s'\n  page shows: %s\n  run gives:  %s"
                   % (block.page, wrong[0], command, wrong[1], wrong[2]))
        if wrong or done.returncode != status:
            report("  --- the command's output ---\n"
                   + "\n".join("  | " + p for p in printed[-40:]))
            failures += 1
    return failures


def write_file_block(block, folder):
    path = os.path.join(folder, block.options["file"])
    if os.path.lexists(path):  # a link into the source tree, or an earlier block's file
        raise ValueError("%s:%d: a docs-test file block may not replace '%s'"
                         % (block.page, block.marker_line, block.options["file"]))
    with open(path, "w", encoding="utf-8") as f:
        f.write(block.text)


def run_patched(block, folder, source_dir, env):
    """A block with patch=: its change applied to the scratch sources for the block, then undone."""
    patch = ["patch", "-p1", "--quiet", "-d", source_dir, "-i", os.path.join(source_dir, block.options["patch"])]
    if subprocess.run(patch).returncode != 0:
        print("%s:%d: %s does not apply to %s" % (block.page, block.marker_line, block.options["patch"], source_dir))
        return 1
    try:
        return run_block(block, folder, env, print)
    finally:
        subprocess.run(patch[:1] + ["-R"] + patch[1:], check=True)


def run_page(build_dir, source_dir, page, patched=False):
    path = os.path.join(source_dir, page)
    with open(path, encoding="utf-8") as f:
        blocks = parse_page(page, f.read())
    env = command_environment(build_dir)
    folder = scratch_folder(build_dir, source_dir)
    failures = ran = 0
    try:
        for block in blocks:
            if "file" in block.options:
                write_file_block(block, folder)
                continue
            skip = block.options.get("skip")
            if not skip and "needs" in block.options:
                check, reason = NEEDS[block.options["needs"]]
                if subprocess.run(check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
                    skip = reason
            if not skip and "patch" in block.options and not patched:
                skip = "a change to the sources (%s): tests/docs/exercises.sh runs it" % block.options["patch"]
            if patched and not skip and "patch" not in block.options:
                continue
            if skip:
                print("%s:%d: skipped: %s" % (page, block.marker_line, skip))
                continue
            failures += run_patched(block, folder, source_dir, env) if patched else run_block(block, folder, env, print)
            ran += len(block.commands)
    finally:
        subprocess.run(["rm", "-rf", folder])
    if not blocks:
        print("%s: no command blocks" % page)
        return 0
    if ran == 0:
        print("SKIPPED: %s has no runnable block here" % page)
        return 77
    print("%s: %d command(s) run, %d disagree with the page" % (page, ran, failures))
    return 1 if failures else 0


SELF_TEST_PAGE = """Text.

<!-- docs-test: run -->
```
$ printf 'one\\ntwo 12.5 ms\\nthree\\n'
one
two <n> ms
```

<!-- docs-test: run match=exact -->
```
$ printf 'a 0x55d0\\nb\\n'
a …
b
```

<!-- docs-test: run -->
```
$ false
[exit 1]
```

<!-- docs-test: run match=unordered -->
```
$ printf 'b\\na\\n'
a
b
```

<!-- docs-test: file shown.sh -->
```sh
echo "from the page's file"
```

<!-- docs-test: run -->
```
$ bash shown.sh
from the page's file
```

<!-- docs-test: skip: needs a CUDA device -->
```
$ nvidia-smi
```
"""


def self_test():
    """The runner must fail on planted drift, or the docs suite proves nothing."""
    folder = tempfile.mkdtemp(prefix="ringdp-docs-self-")
    env = command_environment()
    cases = [
        ("the page as it is", SELF_TEST_PAGE, 0),
        ("a quoted line the run does not print", SELF_TEST_PAGE.replace("one\n", "uno\n", 1), 1),
        ("quoted lines out of order", SELF_TEST_PAGE.replace("one\ntwo <n> ms", "two <n> ms\none"), 1),
        ("a number where the run prints a word", SELF_TEST_PAGE.replace("two <n> ms", "<n> 12.5 ms"), 1),
        ("an exact block with an extra output line", SELF_TEST_PAGE.replace("a …\nb\n", "a …\n"), 1),
        ("an unexpected exit status", SELF_TEST_PAGE.replace("[exit 1]", "[exit 0]"), 1),
        ("a command that fails silently", SELF_TEST_PAGE.replace("$ false\n[exit 1]", "$ false"), 1),
        ("an unordered line the run does not print", SELF_TEST_PAGE.replace("a\nb\n```", "a\nc\n```"), 1),
        ("a file block's text changed", SELF_TEST_PAGE.replace('echo "from the', 'echo "not from the'), 1),
    ]
    bad = 0
    try:
        for name, page, want in cases:
            failures = 0
            case_folder = tempfile.mkdtemp(dir=folder)  # a page's own, as run_page makes
            for block in parse_page("self-test.md", page):
                if "file" in block.options:
                    write_file_block(block, case_folder)
                elif "skip" not in block.options:
                    failures += run_block(block, case_folder, env, lambda _: None)
            got = 1 if failures else 0
            print("%s: %s (%s)" % ("ok" if got == want else "WRONG", name, "fails" if got else "passes"))
            bad += got != want
        for name, page in [("a marker with no fence", "<!-- docs-test: run -->\ntext\n"),
                           ("a command block with no marker", "```\n$ ringdp-train\n```\n"),
                           ("an unknown option", "<!-- docs-test: run ranks=4 -->\n```\n$ true\n```\n")]:
            try:
                parse_page("self-test.md", page)
                print("WRONG: %s was accepted" % name)
                bad += 1
            except ValueError as error:
                print("ok: %s is refused (%s)" % (name, error))
    finally:
        subprocess.run(["rm", "-rf", folder])
    return 1 if bad else 0


def check_listed(source_dir, pages):
    """A page missing from tests/docs/meson.build would never be checked: name it."""
    # docs/ and its folders (docs/lab/): a page moved down a level is a page too.
    docs = sorted(os.path.relpath(os.path.join(folder, name), source_dir)
                  for folder, _, names in os.walk(os.path.join(source_dir, "docs"))
                  for name in names if name.endswith(".md"))
    missing = [page for page in docs if page not in pages]
    for page in missing:
        print("%s has no docs test: add it to docs_pages in tests/docs/meson.build" % page)
    return 1 if missing else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if sys.argv[1:2] == ["--listed"]:
        sys.exit(check_listed(sys.argv[2], sys.argv[3:]))
    patched = sys.argv[1:2] == ["--patched"]
    arguments = sys.argv[2:] if patched else sys.argv[1:]
    if len(arguments) != 3:
        sys.exit(__doc__)
    try:
        sys.exit(run_page(*arguments, patched=patched))
    except ValueError as error:
        print(error)
        sys.exit(1)

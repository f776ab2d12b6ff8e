"""Counts test cases from meson's testlog.json files and prints 'N passed, N failed, N skipped'
(one line per build first when given several, as LABEL=PATH); before them, each skipped test
with the reason it gave.

A Catch2 binary contributes its test cases (from its summary line); any other test counts as
one. A test that exits 77 is skipped; a failed or timed-out test whose output has no Catch2
summary counts as one failure. Exit status 1 when anything failed.
"""
import json
import re
import sys

ALL_PASSED = re.compile(r"All tests passed \(\d+ assertions? in (\d+) test cases?\)")
MIXED = re.compile(r"test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed")
ONLY_FAILED = re.compile(r"test cases:\s*(\d+)\s*\|\s*(\d+) failed")


def count(entry):
    out = re.sub(r"\x1b\[[0-9;]*m", "", entry.get("stdout") or "")
    result = entry["result"]
    if result == "SKIP":
        return 0, 0, 1
    if result == "OK":
        found = ALL_PASSED.findall(out)
        return (sum(int(n) for n in found) if found else 1), 0, 0
    mixed = MIXED.findall(out)
    if mixed:
        return sum(int(p) for _, p, _ in mixed), max(1, sum(int(f) for _, _, f in mixed)), 0
    only = ONLY_FAILED.findall(out)
    if only:
        return 0, sum(int(f) for _, f in only), 0
    return 0, 1, 0


def skip_reason(entry):
    """What a skipped test said: its SKIPPED line, else its last line (a skip must say why)."""
    lines = [line.strip() for line in (entry.get("stdout") or "").splitlines() if line.strip()]
    said = [line for line in lines if "SKIPPED" in line]
    return (said or lines or ["(it said nothing)"])[-1]


def tally(path, skips):
    passed = failed = skipped = 0
    with open(path, encoding="utf-8") as log:
        for line in log:
            if not line.strip():
                continue
            entry = json.loads(line)
            p, f, s = count(entry)
            if s:
                skips.append(f"skipped: {entry['name']}: {skip_reason(entry)}")
            passed, failed, skipped = passed + p, failed + f, skipped + s
    return passed, failed, skipped


def main(logs):
    """logs: 'LABEL=PATH' (or a bare PATH); one line per log when there are several, then the total."""
    totals, skips, lines = [0, 0, 0], [], []
    for item in logs:
        label, _, path = item.rpartition("=") if "=" in item else ("", "", item)
        counts = tally(path, skips)
        if len(logs) > 1:
            lines.append(f"{label or path}: {counts[0]} passed, {counts[1]} failed, {counts[2]} skipped")
        totals = [t + c for t, c in zip(totals, counts)]
    # Each skip with its reason, so a log shows at once whether one is a package set-up missed.
    for line in skips + lines:
        print(line)
    print(f"{totals[0]} passed, {totals[1]} failed, {totals[2]} skipped")
    return 1 if totals[1] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

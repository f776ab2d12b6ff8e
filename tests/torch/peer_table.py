"""The torch-peer table (tests/torch/peer_runner.py): merges the ranks' verdicts on a test, names
the ringdp gap a failure comes from, and writes the table as JSON and as text, atomically.

A verdict: {"result": passed | failed | skipped | crashed | hung, "reason": first line (a skip's
reason, an error's first line, "rank R: ..." when ranks differ), "detail": the first failing
rank's traceback, "seconds": the slowest rank's}.
"""
import json
import os
import re
import tempfile

# Why ringdp may not pass a test gloo passes, as the failure or skip reads: what ringdp refuses by
# name today (docs/torch.md, "What is refused, by name") and the tests PyTorch restricts to other
# backends. Anything else is a finding, and fails --check.
KNOWN_GAPS = [
    ("PREMUL_SUM in reduce", r"PREMUL_SUM is not supported by ringdp's reduce",
     "all_reduce and the reduce-scatters take it; reduce does not (docs/torch.md)"),
    ("dtype", r"which ringdp does not support", "int16 and other dtypes outside ringdp's nine"),
    ("several tensors per call", r"tensors; the ringdp backend takes one per call",
     "out of scope: one device per process"),
    ("CUDA tensors", r"the ringdp backend takes CPU tensors", "out of scope here: CPU only (no GPU on CI)"),
    ("sparse tensors", r"the ringdp backend takes dense tensors|Only Gloo backend supports? sparse",
     "out of scope: dense tensors only"),
    # Skips, not failures: the test itself says which backends it runs on.
    ("timeouts that raise", r"Only gloo backend supports timeouts",
     "by design: a collective past ringdp's timeout ends the job through the watchdog (docs/errors.md) instead"
     " of raising in the caller"),
    # 2.x names the backend it refuses: "Test requires backend ringdp to be one of {'gloo'}".
    ("test names its backends", r"Test requires backend (\w+ )?to be one of|get_future is only supported on mpi, nccl"
     r" and gloo|GLOO Batch Send Recv CPU",
     "PyTorch's test runs only on the backends it names (require_backend, BACKEND ==), whatever a plugin"
     " backend supports; no test is patched"),
    # 2.x: torch's ProcessGroup names every backend registered from outside "custom"
    # (ProcessGroup::getBackendName, BackendType::CUSTOM), and DDP's logger records that name.
    ("DDP logs a plugin backend as 'custom'", r"String comparison failed: 'custom' != 'ringdp'",
     "PyTorch's: any backend registered with register_backend is logged as 'custom'"),
]
SECONDARY = re.compile(r"RuntimeError: barrier timeout$")
RESULTS = ("passed", "failed", "crashed", "hung", "skipped", "excluded")


def first_line(text):
    return text.strip().splitlines()[0] if text.strip() else ""


def merge(ends, death=None):
    """One verdict from the ranks' end events; `death` = (result, reason) when the job ended
    before every rank ended the test."""
    seconds = max((e["seconds"] for e in ends), default=0.0)
    # A rank's own error before the echo of a peer's (a rank outside a group times out in
    # Barrier when the members failed before reaching it).
    failing = sorted((e for e in ends if e["result"] == "failed"),
                     key=lambda e: (bool(SECONDARY.search(first_line(e["reason"]))), e.get("rank", 0)))
    if failing:
        detail = failing[0]["reason"]
        note = f" (then {death[0]}: {death[1]})" if death else ""
        return {"result": "failed", "reason": first_line(detail) + note, "detail": detail[:4000],
                "seconds": seconds}
    if death:
        return {"result": death[0], "reason": death[1], "detail": "", "seconds": seconds}
    skipped = [e for e in ends if e["result"] == "skipped"]
    if skipped:
        reasons = sorted({first_line(e["reason"]) for e in skipped})
        mixed = "" if len(skipped) == len(ends) else f" (on {len(skipped)} of {len(ends)} ranks; the others passed)"
        return {"result": "skipped", "reason": "; ".join(reasons) + mixed, "detail": "", "seconds": seconds}
    return {"result": "passed", "reason": "", "detail": "", "seconds": seconds}


def gap_of(verdict):
    """The KNOWN_GAPS name a ringdp failure comes from, or None (a finding)."""
    text = verdict.get("reason", "") + "\n" + verdict.get("detail", "")
    for name, pattern, _ in KNOWN_GAPS:
        if re.search(pattern, text):
            return name
    return None


def rows(table):
    """(test, np, gloo verdict, ringdp verdict, gap) for every test run, in name order."""
    for name in sorted(table["results"]):
        for np, by_backend in sorted(table["results"][name].items()):
            gloo, ringdp = by_backend.get("gloo"), by_backend.get("ringdp")
            gap = gap_of(ringdp) if ringdp and ringdp["result"] != "passed" else None
            yield name, np, gloo, ringdp, gap


def summary(table):
    """Counts per backend and world size, and the tests gloo passes and ringdp does not."""
    counts, regressions = {}, []
    for name, np, gloo, ringdp, gap in rows(table):
        for backend, verdict in (("gloo", gloo), ("ringdp", ringdp)):
            if verdict:
                key = f"{backend} np={np}"
                counts.setdefault(key, dict.fromkeys(RESULTS, 0))[verdict["result"]] += 1
        if gloo and ringdp and gloo["result"] == "passed" and ringdp["result"] != "passed":
            regressions.append({"test": name, "np": int(np), "ringdp": ringdp["result"],
                                "gap": gap, "reason": ringdp["reason"]})
    for key in counts:
        counts[key]["excluded"] = len(table["excluded"])
    return counts, regressions


def text_table(table, counts, regressions):
    cell = lambda v: v["result"] if v else "-"  # noqa: E731
    lines = [f"torch-peer: PyTorch's DistributedTest._DistTestBase on gloo and ringdp ({table['date']},"
             f" subset {table['subset']})", f"ringdp: {table.get('ringdp', '?')}", ""]
    lines.append(f"{'':12}" + "".join(f"{r:>9}" for r in RESULTS))
    for key, c in sorted(counts.items()):
        lines.append(f"{key:12}" + "".join(f"{c[r]:>9}" for r in RESULTS))
    lines += ["", "seconds: " + ", ".join(f"{k} {v}" for k, v in table["seconds"].items()), ""]
    lines.append(f"gloo passes, ringdp does not ({len(regressions)}):")
    for r in regressions:
        lines.append(f"  {r['test']} np={r['np']}: {r['ringdp']} [{r['gap'] or 'FINDING'}] {r['reason'][:160]}")
    lines += ["", "excluded:"] + [f"  {n}: {why}" for n, why in sorted(table["excluded"].items())]
    head = "\n".join(lines) + "\n"
    lines += ["", f"{'test':58} {'np':>2} {'gloo':8} {'ringdp':8} reason (ringdp's, else gloo's)"]
    for name, np, gloo, ringdp, gap in rows(table):
        reason = (ringdp or {}).get("reason") or (gloo or {}).get("reason") or ""
        if gap:
            reason = f"[{gap}] {reason}"
        lines.append(f"{name:58} {np:>2} {cell(gloo):8} {cell(ringdp):8} {reason[:200]}")
    return head, "\n".join(lines) + "\n"


def write_atomically(path, text):
    fd, temp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temp, path)


def write(table, out_dir):
    """Writes peer-table.json and peer-table.txt; prints the summary; returns the unexplained
    regressions ("test np=N: reason"), which --check fails on."""
    counts, regressions = summary(table)
    table = dict(table, summary=counts, gloo_passes_ringdp_does_not=regressions,
                 known_gaps={name: why for name, _, why in KNOWN_GAPS})
    write_atomically(os.path.join(out_dir, "peer-table.json"), json.dumps(table, indent=1) + "\n")
    head, text = text_table(table, counts, regressions)
    write_atomically(os.path.join(out_dir, "peer-table.txt"), text)
    print(head, end="", flush=True)
    return [f"{r['test']} np={r['np']}: {r['reason'][:200]}" for r in regressions if not r["gap"]]

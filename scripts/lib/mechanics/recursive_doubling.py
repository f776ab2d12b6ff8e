"""Recursive doubling (docs/collectives.md): on 4 ranks the partners of each round (rank xor
mask), on 3 ranks the fold-in that makes a power of two (rank 0 hands its buffer to rank 1 and
waits) and the unfold that gives it the result, as RINGDP_TRACE prints them."""
import re

from mechanics import runs

ARGS = ["all_reduce", "-b", "16", "-e", "16", "-w", "0", "-n", "1", "-c", "0", "--algo", "rd"]
RUNS = [("apps/bench/ringdp-bench", 4, ARGS, {}), ("apps/bench/ringdp-bench", 3, ARGS, {})]
SEND = re.compile(r"send -> rank (\d+)")
RECV = re.compile(r"recv <- rank (\d+), (reduce|store)")


def _one_run(lines):
    events = []
    total = 0
    for rank, step, steps, phase, text in runs.collective_steps(lines, "all_reduce", "recursive_doubling"):
        send, recv = SEND.search(text), RECV.search(text)
        if not send and not recv:
            raise runs.RunError(f"recursive doubling step line not understood: '{text}'")
        total = steps
        events.append({"step": step, "phase": phase, "rank": rank, "send_to": int(send.group(1)) if send else None,
                       "recv_from": int(recv.group(1)) if recv else None, "action": recv.group(2) if recv else None})
    ranks = 1 + max(max(e["rank"], e["send_to"] or 0, e["recv_from"] or 0) for e in events)
    steps = []
    held = [[r] for r in range(ranks)]  # whose values each rank's buffer sums
    for k in range(1, total + 1):
        here = [e for e in events if e["step"] == k]
        exchanges = sorted({tuple(sorted((e["rank"], e["send_to"]))) for e in here
                            if e["phase"] == "exchange" and e["send_to"] == e["recv_from"]})
        transfers = sorted({(e["rank"], e["send_to"]) for e in here if e["phase"] != "exchange" and e["send_to"]
                            is not None})
        for sender, receiver in transfers:  # every one-way send has its receive, or the trace is wrong
            if not any(e["rank"] == receiver and e["recv_from"] == sender for e in here):
                raise runs.RunError(f"step {k}: rank {sender} sends to rank {receiver}, who receives nothing")
        before = [list(h) for h in held]
        for e in here:
            if e["recv_from"] is not None:
                got = before[e["recv_from"]]
                held[e["rank"]] = sorted(set(before[e["rank"]]) | set(got)) if e["action"] == "reduce" else list(got)
        busy = {e["rank"] for e in here}
        steps.append({"step": k, "phase": sorted({e["phase"] for e in here}), "exchanges": [list(p) for p in exchanges],
                      "transfers": [list(t) for t in transfers], "idle": [r for r in range(ranks) if r not in busy],
                      "holdings": [list(h) for h in held]})
    return {"ranks": ranks, "steps": steps}


def parse(traces):
    """facts: runs, one per world size: {ranks, steps: [{step, phase, exchanges: [[a, b]],
    transfers: [[from, to]] (fold-in, unfold), idle: [rank], holdings[rank]: whose values it sums}]}."""
    return {"runs": [_one_run(lines) for lines in traces]}


def draw(facts, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch

    worlds = facts["runs"]
    fig, axes = plt.subplots(1, len(worlds), figsize=(5.2 * len(worlds), 4.3))
    for ax, world in zip(axes, worlds):
        n, steps = world["ranks"], world["steps"]
        ax.set_xlim(0.3, len(steps) + 0.9)
        ax.set_ylim(n - 0.4, -0.9)
        ax.set_axis_off()
        ax.set_title(f"{n} ranks: {len(steps)} steps", fontsize=10)
        for r in range(n):
            ax.text(0.35, r, f"rank {r}", va="center", fontsize=8, weight="bold")
        for s in steps:
            x = s["step"] + 0.2
            ax.text(x, -0.6, f"step {s['step']}\n{' / '.join(s['phase'])}", ha="center", fontsize=8)
            for r in range(n):
                idle = r in s["idle"]
                ax.plot([x], [r], "o", markersize=15, markerfacecolor="white" if idle else "#9ecae1",
                        markeredgecolor="grey" if idle else "#08519c")
                held = s["holdings"][r]
                ax.text(x + 0.17, r + 0.05, "idle" if idle else ("all" if len(held) == n else "+".join(map(str, held))),
                        fontsize=7, va="center", color="grey" if idle else "black")
            for a, b in s["exchanges"]:
                ax.add_patch(FancyArrowPatch((x - 0.08, a + 0.18), (x - 0.08, b - 0.18), arrowstyle="<|-|>",
                                             mutation_scale=9, color="#08519c",
                                             connectionstyle=f"arc3,rad={0.35 if abs(a - b) > 1 else 0}"))
            for a, b in s["transfers"]:
                ax.add_patch(FancyArrowPatch((x + 0.02, a + (0.18 if b > a else -0.18)),
                                             (x + 0.02, b - (0.18 if b > a else -0.18)), arrowstyle="-|>",
                                             mutation_scale=9, color="crimson"))
    fig.suptitle("Recursive doubling, from RINGDP_TRACE: blue = both partners exchange and reduce, "
                 "red = one-way (fold-in, unfold); beside each rank: whose values it sums", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

"""The ring all-reduce on 4 ranks, step by step (docs/ring-allreduce.md): which chunk each rank
sends right and receives from the left at every reduce-scatter and all-gather step, as
RINGDP_TRACE prints it, and what each rank's copy of each chunk holds after the step."""
import re

from mechanics import runs

RANKS = 4
# 10 floats: chunks of 3, 3, 2, 2 elements, the run docs/ring-allreduce.md shows.
RUNS = [("apps/bench/ringdp-bench", RANKS, ["all_reduce", "-b", "40", "-e", "40", "-w", "0", "-n", "1", "-c", "0",
                                            "--algo", "ring"], {})]
MOVE = re.compile(r"send chunk (\d+) -> rank (\d+); recv chunk (\d+) <- rank (\d+), (reduce|store)$")


def parse(traces):
    """facts: ranks; steps, each {step, phase, moves: [{rank, send_chunk, to, recv_chunk, from, action}]};
    holdings[k][rank][chunk]: the ranks whose values that copy sums after step k (k = 0: before)."""
    (lines,) = traces
    steps = {}
    n = None
    for rank, step, total, phase, text in runs.collective_steps(lines, "all_reduce", "ring"):
        m = MOVE.match(text)
        if not m:
            raise runs.RunError(f"ring step line not understood: '{text}'")
        n = total
        steps.setdefault(step, {"step": step, "phase": phase, "moves": []})["moves"].append(
            {"rank": rank, "send_chunk": int(m.group(1)), "to": int(m.group(2)), "recv_chunk": int(m.group(3)),
             "from": int(m.group(4)), "action": m.group(5)})
    ordered = [steps[k] for k in sorted(steps)]
    ranks = len({m["rank"] for s in ordered for m in s["moves"]})
    if len(ordered) != n or any(len(s["moves"]) != ranks for s in ordered):
        raise runs.RunError(f"the trace has {len(ordered)} of {n} ring steps, or a rank is missing from one")
    holdings = [[[[r] for _ in range(ranks)] for r in range(ranks)]]
    for s in ordered:
        before = holdings[-1]
        after = [[list(c) for c in row] for row in before]
        sent = {(m["rank"], m["to"]): m["send_chunk"] for m in s["moves"]}
        for m in s["moves"]:
            chunk, source = m["recv_chunk"], m["from"]
            if sent.get((source, m["rank"])) != chunk:
                raise runs.RunError(f"step {s['step']}: rank {m['rank']} receives chunk {chunk} from rank {source}, "
                                    f"which sends it chunk {sent.get((source, m['rank']))}")
            incoming = before[source][chunk]
            after[m["rank"]][chunk] = sorted(set(before[m["rank"]][chunk]) | set(incoming)) \
                if m["action"] == "reduce" else list(incoming)
        holdings.append(after)
    return {"ranks": ranks, "steps": ordered, "holdings": holdings}


def _label(ranks_in, total):
    return "all" if len(ranks_in) == total else "+".join(str(r) for r in ranks_in)


def _summary(ax, facts):
    """What the panels show, in words read from the facts: who owns which complete chunk after
    the reduce-scatter, and how many steps each phase took."""
    if ax is None:
        return
    n = facts["ranks"]
    phases = [s["phase"] for s in facts["steps"]]
    scattered = phases.count("reduce-scatter")
    owned = [next(c for c in range(n) if len(facts["holdings"][scattered][r][c]) == n) for r in range(n)]
    lines = [f"{scattered} reduce-scatter steps: each rank sends",
             "one chunk right and adds the one from",
             "its left into its own copy.",
             f"After step {scattered} each rank holds one",
             "complete chunk: " + ", ".join(f"rank {r} c{c}" for r, c in enumerate(owned[:2])) + ",",
             ", ".join(f"rank {r} c{c}" for r, c in list(enumerate(owned))[2:]) + ".",
             "",
             f"{phases.count('all-gather')} all-gather steps: each rank forwards",
             "complete chunks; received copies",
             "replace the partial ones.",
             "",
             "red: the chunk received at that step"]
    ax.text(0.0, 0.5, "\n".join(lines), fontsize=8, va="center", transform=ax.transAxes)


def draw(facts, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Rectangle

    n = facts["ranks"]
    panels = [("before: each rank holds its own input", None)] + [
        (f"step {s['step']}: {s['phase']}", s) for s in facts["steps"]]
    columns = (len(panels) + 1) // 2
    fig, axes = plt.subplots(2, columns, figsize=(3.1 * columns, 6.4))
    shades = plt.get_cmap("Blues")
    for ax in axes.flat:
        ax.set_axis_off()
    for k, (title, step) in enumerate(panels):
        ax = axes.flat[k]
        ax.set_xlim(-0.7, n - 0.3)
        ax.set_ylim(n + 0.2, -1.1)
        ax.set_title(title, fontsize=9)
        received = {(m["rank"], m["recv_chunk"]) for m in step["moves"]} if step else set()
        for r in range(n):
            ax.text(r, -0.75, f"rank {r}", ha="center", fontsize=8, weight="bold")
            for c in range(n):
                held = facts["holdings"][k][r][c]
                ax.add_patch(Rectangle((r - 0.4, c - 0.4), 0.8, 0.8, facecolor=shades(0.15 + 0.8 * len(held) / n),
                                       edgecolor="crimson" if (r, c) in received else "grey",
                                       linewidth=2.2 if (r, c) in received else 0.6))
                ax.text(r, c, f"c{c}\n{_label(held, n)}", ha="center", va="center", fontsize=7,
                        color="white" if len(held) > n / 2 else "black")
        for m in step["moves"] if step else []:
            source, target, c = m["from"], m["rank"], m["recv_chunk"]
            style = dict(arrowstyle="-|>", mutation_scale=9, color="crimson", linewidth=1.1)
            if abs(target - source) == 1:
                ax.add_patch(FancyArrowPatch((source + 0.3, c), (target - 0.3, c), **style))
            else:  # the ring closes: leaves the last rank on the right, enters the first on the left
                ax.add_patch(FancyArrowPatch((source + 0.3, c), (source + 0.68, c), **style))
                ax.add_patch(FancyArrowPatch((target - 0.68, c), (target - 0.3, c), **style))
                ax.text(target - 0.62, c - 0.22, f"{source}", fontsize=6, color="crimson")
        if step:
            ax.text((n - 1) / 2, n - 0.05, "received chunks: " + ("summed in (reduce)" if step["moves"][0]["action"]
                                                                   == "reduce" else "copied over (store)"),
                    ha="center", fontsize=7, color="crimson")
    _summary(axes.flat[len(panels)] if len(panels) < len(axes.flat) else None, facts)
    fig.suptitle(f"Ring all-reduce on {n} ranks, from RINGDP_TRACE (cell: chunk, and whose values it sums so far)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

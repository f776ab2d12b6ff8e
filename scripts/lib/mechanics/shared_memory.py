"""The shared-memory all-reduce on 4 ranks (docs/collectives.md): each rank copies its part into
its slot; in a scattered round rank r reduces chunk r of every slot, writes the sum back into its
own slot, and the others copy it from there. Which rank reduces which elements, and who copies
what from whom, as RINGDP_TRACE prints it (comm/algorithms/all_reduce_shared.cpp)."""
import re

from mechanics import runs

RANKS = 4
# 64 KiB of floats through 32 KiB slots: two rounds of 8192 elements, each scattered (>= 16 KiB).
RUNS = [("apps/bench/ringdp-bench", RANKS, ["all_reduce", "-b", "64K", "-e", "64K", "-w", "0", "-n", "1", "-c", "0",
                                            "--algo", "shm"], {"RINGDP_SHM_SLOT_BYTES": "32768"})]
REDUCE = re.compile(r"reduce chunk (\d+) = elements \[(\d+), (\d+)\) of the round's elements \[(\d+), (\d+)\) "
                    r"from the slots of ranks 0-(\d+) into rank (\d+)'s slot$")
COPY = re.compile(r"copy chunk (\d+) = elements \[(\d+), (\d+)\) <- rank (\d+)'s slot$")


def parse(traces):
    """facts: ranks; rounds: [{elements: [first, end), chunks: [{chunk, reducer, elements: [b, e)}],
    copies: [{rank, chunk, from, elements}]}], rounds and chunks in order."""
    (lines,) = traces
    rounds, round_of_step, copies = {}, {}, []
    ranks = set()
    for rank, step, _, phase, text in runs.collective_steps(lines, "all_reduce", "shared_memory"):
        ranks.add(rank)
        if not text:
            continue  # the step's own line: shared memory has no peer or chunk to name there
        m = REDUCE.match(text)
        if m:
            span = (int(m.group(4)), int(m.group(5)))
            chunk = {"chunk": int(m.group(1)), "reducer": rank, "elements": [int(m.group(2)), int(m.group(3))],
                     "from_slots": int(m.group(6)) + 1, "into_slot_of": int(m.group(7))}
            rounds.setdefault(span, {"elements": list(span), "chunks": [], "copies": []})["chunks"].append(chunk)
            round_of_step[(rank, step)] = span
            continue
        m = COPY.match(text)
        if m:
            copies.append((rank, step, {"rank": rank, "chunk": int(m.group(1)), "from": int(m.group(4)),
                                        "elements": [int(m.group(2)), int(m.group(3))]}))
            continue
        if phase == "shared memory":
            raise runs.RunError(f"a whole (not scattered) round: '{text}'; this picture needs rounds of 16 KiB or more")
        raise runs.RunError(f"shared-memory trace line not understood: '{text}'")
    for rank, step, copy in copies:  # an all-gather step follows its round's reduce-scatter step
        span = round_of_step.get((rank, step - 1))
        if span is None:
            raise runs.RunError(f"rank {rank} copies at step {step} with no reduce-scatter at step {step - 1}")
        rounds[span]["copies"].append(copy)
    if not rounds:
        raise runs.RunError("no scattered shared-memory round in the trace")
    ordered = [rounds[k] for k in sorted(rounds)]
    for r in ordered:
        r["chunks"].sort(key=lambda c: c["chunk"])
        r["copies"].sort(key=lambda c: (c["rank"], c["chunk"]))
    return {"ranks": len(ranks), "rounds": ordered}


def draw(facts, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Rectangle

    n, rounds = facts["ranks"], facts["rounds"]
    fig, axes = plt.subplots(1, len(rounds), figsize=(6.4 * len(rounds), 4.6), squeeze=False)
    colours = plt.get_cmap("Set2")
    for ax, rnd in zip(axes[0], rounds):
        first, end = rnd["elements"]
        width = end - first
        ax.set_xlim(-0.2 * width, 1.05 * width)
        ax.set_ylim(n + 1.6, -1.2)
        ax.set_axis_off()
        ax.set_title(f"round: elements [{first}, {end}) of the buffer", fontsize=10)
        for slot in range(n):
            ax.text(-0.02 * width, slot + 0.4, f"rank {slot}'s slot", ha="right", va="center", fontsize=8)
            for c in rnd["chunks"]:
                b, e = c["elements"]
                own = c["into_slot_of"] == slot
                ax.add_patch(Rectangle((b - first, slot), e - b, 0.8, facecolor=colours(c["reducer"]),
                                       alpha=0.95 if own else 0.35, edgecolor="black", linewidth=1.8 if own else 0.4,
                                       hatch="//" if own else None))
                if slot == 0:
                    ax.text((b + e) / 2 - first, -0.35, f"chunk {c['chunk']}\n[{b}, {e})", ha="center", fontsize=7)
        for c in rnd["chunks"]:
            b, e = c["elements"]
            middle = (b + e) / 2 - first
            ax.add_patch(FancyArrowPatch((middle, n - 0.1), (middle, n + 0.45), arrowstyle="-|>", mutation_scale=9))
            copied_by = sorted(cp["rank"] for cp in rnd["copies"] if cp["chunk"] == c["chunk"])
            ax.text(middle, n + 0.6, f"rank {c['reducer']} sums\nall {c['from_slots']} slots;\n"
                    f"copied by {', '.join(map(str, copied_by))}", ha="center", va="top", fontsize=7)
    fig.suptitle(f"Shared-memory all-reduce of {facts['rounds'][-1]['elements'][1]} floats on {n} ranks, "
                 f"{len(rounds)} round(s), from RINGDP_TRACE: colour = the rank that reduces the chunk out of every "
                 "slot; hatched = where it writes the sum back, for the others to copy", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

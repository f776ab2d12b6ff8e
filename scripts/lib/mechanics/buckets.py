"""A DDP model's gradient buckets (docs/ddp.md): each bucket's flat buffer with every parameter's
offset, in backward's order, and each parameter's .grad as a view of its slice, as RINGDP_TRACE
prints them (the view's place is read from the pointers, comm/ddp/reducer.cpp)."""
import re

from mechanics import runs

RANKS = 2
# A small MLP 10 -> 4 -> 3 -> 1 and bucket caps of 0.00006 MiB (62.9 bytes, 15.7 floats): by
# PyTorch's rule a bucket closes once it reaches its cap, so the first holds the last two layers
# (19 floats, above the cap) and the second the first layer; one epoch is enough, the views are
# made at the first backward.
RUNS = [("apps/train/ringdp-train", RANKS, ["--model", "mlp", "--hidden", "4,3", "--epochs", "1", "--bucket-mb",
                                           "0.00006", "--first-bucket-mb", "0.00006"], {})]
LAYOUT = re.compile(r"rank (\d+) ddp bucket (\d+) holds (\d+) (\w+): (.*)$")
MEMBER = re.compile(r"(\S+) \[([\d, ]*)\] at offset (\d+) \((\d+) elements\)$")
VIEW = re.compile(r"rank (\d+) ddp bucket (\d+): (\S+)\.grad \[([\d, ]*)\] is a view of elements \[(\d+), (\d+)\) "
                  r"of its buffer$")


def _shape(text):
    return [int(d) for d in text.split(",") if d.strip()]


def parse(traces):
    """facts: ranks; buckets: [{bucket, elements, dtype, parameters: [{name, shape, offset, elements,
    grad_view: [begin, end)}]}], as rank 0 printed them (every rank must print the same)."""
    (lines,) = traces
    per_rank = {}
    for line in lines:
        m = LAYOUT.match(line)
        if m:
            members = [MEMBER.match(part.strip()) for part in m.group(5).split(";")]
            if not all(members):
                raise runs.RunError(f"bucket layout line not understood: '{line}'")
            per_rank.setdefault(int(m.group(1)), {})[int(m.group(2))] = {
                "bucket": int(m.group(2)), "elements": int(m.group(3)), "dtype": m.group(4),
                "parameters": [{"name": p.group(1), "shape": _shape(p.group(2)), "offset": int(p.group(3)),
                                "elements": int(p.group(4)), "grad_view": None} for p in members]}
    if not per_rank:
        raise runs.RunError("no 'ddp bucket ... holds' line in the trace (did the trace format change?)")
    for line in lines:
        m = VIEW.match(line)
        if not m:
            continue
        bucket = per_rank.get(int(m.group(1)), {}).get(int(m.group(2)))
        found = [p for p in (bucket or {}).get("parameters", []) if p["name"] == m.group(3)]
        if not found:
            raise runs.RunError(f"a .grad view of a parameter no bucket holds: '{line}'")
        found[0]["grad_view"] = [int(m.group(5)), int(m.group(6))]
        found[0]["grad_shape"] = _shape(m.group(4))
    layouts = [[per_rank[r][b] for b in sorted(per_rank[r])] for r in sorted(per_rank)]
    missing = [p["name"] for layout in layouts for b in layout for p in b["parameters"] if p["grad_view"] is None]
    if missing:
        raise runs.RunError(f"no '.grad ... is a view of' line for {', '.join(sorted(set(missing)))} "
                            "(did the trace format change?)")
    if any(layout != layouts[0] for layout in layouts):
        raise runs.RunError("the ranks' bucket layouts or views differ")
    return {"ranks": len(layouts), "buckets": layouts[0]}


def draw(facts, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Polygon, Rectangle

    buckets = facts["buckets"]
    widest = max(b["elements"] for b in buckets)
    fig, axes = plt.subplots(len(buckets), 1, figsize=(max(8, widest * 0.32), 3.3 * len(buckets)))
    colours = plt.get_cmap("tab10")
    index = 0
    for ax, bucket in zip(axes, buckets):
        ax.set_xlim(-0.5, widest + 0.5)
        ax.set_ylim(7.0, -1.6)
        ax.set_axis_off()
        ax.text(0, -1.2, f"bucket {bucket['bucket']}: one flat buffer of {bucket['elements']} {bucket['dtype']}, "
                f"all-reduced as one tensor", fontsize=9, weight="bold")
        for p in bucket["parameters"]:
            colour = colours(index % 10)
            index += 1
            for e in range(p["offset"], p["offset"] + p["elements"]):
                ax.add_patch(Rectangle((e, 0), 1, 1, facecolor=colour, alpha=0.45, edgecolor="black", linewidth=0.4))
                ax.text(e + 0.5, 0.5, str(e), ha="center", va="center", fontsize=5.5)
            ax.text(p["offset"], -0.15, f"{p['name']} @{p['offset']}", fontsize=6.5, rotation=30, va="bottom")
            begin, end = p["grad_view"]
            shape = p["grad_shape"]
            rows, cols = (shape[0], shape[1]) if len(shape) == 2 else (1, shape[0] if shape else 1)
            top = 2.6
            for i in range(rows):
                for j in range(cols):
                    ax.add_patch(Rectangle((begin + j, top + i * 0.75), 1, 0.75, facecolor=colour, alpha=0.7,
                                           edgecolor="black", linewidth=0.4))
                    ax.text(begin + j + 0.5, top + i * 0.75 + 0.38, str(begin + i * cols + j), ha="center",
                            va="center", fontsize=5)
            ax.add_patch(Polygon([(begin, 1), (end, 1), (begin + cols, top), (begin, top)], closed=True,
                                 facecolor=colour, alpha=0.15, edgecolor="none"))
            # Neighbours' labels on alternate levels: a one-element parameter's slice is one cell wide.
            level = 0.15 + 1.0 * (index % 2)
            ax.text(begin, top + rows * 0.75 + level, f"{p['name']}.grad {shape}\n= elements [{begin}, {end})",
                    fontsize=6, va="top")
    fig.suptitle(f"DDP buckets, from RINGDP_TRACE ({facts['ranks']} ranks, the same on each): each .grad is a view "
                 "of its slice (numbers: element index in the bucket)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

#!/usr/bin/python3
"""The DDP paper's two experiments on this machine: step time against bucket cap (from one bucket
per tensor to one bucket for the whole model) and with overlap on and off, for two MLPs on 2 and
4 ranks. Each configuration runs ROUNDS times (interleaved, so drift hits all alike), each run
reports the median of STEPS steps; the table gives the median of those medians and the ratio
to the default (25 MiB, overlap on) measured in the same sweep. Not a test.

    perf/ddp_buckets.py [--rounds 3] [--steps 6] [--ranks 2,4] [--out perf-out/ddp-buckets]
    perf/ddp_buckets.py --net 1gbit --ranks 2 ...   one rank per host, hosts made of network
                                                   namespaces (tests/net/cluster.sh; root)

Writes OUT.csv, OUT.md (the table docs/ddp.md quotes) and OUT.png (needs python3-matplotlib).
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys

MODELS = {
    "wide": "1024,4096,4096,1024",  # 6 tensors, 100.7 MB of gradients: bandwidth
    "deep": ",".join(["256"] * 33),  # 64 tensors of 256 KiB or 1 KiB, 8.4 MB: latency (alpha) per call
}
CONFIGS = [  # label, bucket cap (MiB), overlap
    ("per tensor", 0.0001, 1),
    ("1 MiB", 1, 1),
    ("4 MiB", 4, 1),
    ("25 MiB (default)", 25, 1),
    ("whole model", 1024, 1),
    ("25 MiB, no overlap", 25, 0),
    ("per tensor, no overlap", 0.0001, 0),
]
LINE = re.compile(r"buckets (\d+) .* median step ([\d.]+) ms\s+backward ([\d.]+) ms\s+comm wait ([\d.]+) ms\s+overlap (\S+)")


def launcher(build):
    config = open(os.path.join(build, "config.h"), encoding="utf-8").read()
    impl = re.search(r'RINGDP_MPI_IMPL "(.*)"', config).group(1)
    mpiexec = re.search(r'RINGDP_MPI_LAUNCHER "(.*)"', config).group(1)
    return [mpiexec] + ([] if impl == "mpich" else ["--oversubscribe"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--out", default="perf-out/ddp-buckets")
    ap.add_argument("--net", metavar="RATE", help="run each rank on its own namespace host, links shaped to RATE")
    ap.add_argument("--models", default=",".join(MODELS), help="which of: " + ", ".join(MODELS))
    ap.add_argument("--configs", default=",".join(str(i) for i in range(len(CONFIGS))),
                    help="which configurations, by index: " + "; ".join(f"{i} {c[0]}" for i, c in enumerate(CONFIGS)))
    args = ap.parse_args()
    if "3" not in args.configs.split(","):
        sys.exit("perf/ddp_buckets.py: error: --configs must include 3, the default every ratio is taken against")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_mpi_yield_when_idle="1")
    bench = os.path.join(args.build, "perf", "ringdp-ddp-bench")
    if not os.access(bench, os.X_OK):
        sys.exit(f"perf/ddp_buckets.py: error: {bench} is missing; build first (ninja -C {args.build})")
    results = {}  # (np, model, label) -> list of (step, backward, wait, buckets, overlap)
    for rnd in range(args.rounds):
        for np in [int(n) for n in args.ranks.split(",")]:
            for model in args.models.split(","):
                widths = MODELS[model]
                for label, cap, overlap in [CONFIGS[int(i)] for i in args.configs.split(",")]:
                    run = [bench, str(args.steps), str(cap), str(overlap), widths]
                    if args.net:
                        cmd = ["tests/net/cluster.sh", "run", "--hosts", str(np), "--ranks-per-host", "1", "--rate",
                               args.net, "--timeout", "600", "--"] + run
                    else:
                        cmd = launcher(args.build) + ["-n", str(np)] + run
                    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
                    m = LINE.search(out.stdout)
                    if out.returncode != 0 or not m:
                        sys.exit(f"perf/ddp_buckets.py: error: {' '.join(cmd)} failed:\n{out.stdout}{out.stderr}")
                    row = (float(m.group(2)), float(m.group(3)), float(m.group(4)), int(m.group(1)), m.group(5))
                    results.setdefault((np, model, label), []).append(row)
                    print(f"round {rnd + 1}/{args.rounds} np={np} {model:4} {label:24} step {row[0]:7.1f} ms  "
                          f"buckets {row[3]:3}  overlap {row[4]}", flush=True)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    table = ["| ranks | model | buckets (cap) | buckets | step ms (median) | vs default | backward ms | wait ms |",
             "|---|---|---|---|---|---|---|---|"]
    with open(args.out + ".csv", "w", encoding="utf-8", newline="") as f:
        out = csv.writer(f)
        out.writerow(["ranks", "model", "config", "buckets", "step_ms", "backward_ms", "wait_ms", "ratio_to_default"])
        for (np, model, label), rows in results.items():
            step = statistics.median(r[0] for r in rows)
            base = statistics.median(r[0] for r in results[(np, model, "25 MiB (default)")])
            back = statistics.median(r[1] for r in rows)
            wait = statistics.median(r[2] for r in rows)
            out.writerow([np, model, label, rows[0][3], f"{step:.1f}", f"{back:.1f}", f"{wait:.1f}", f"{step / base:.3f}"])
            table.append(f"| {np} | {model} | {label} | {rows[0][3]} | {step:.1f} | {step / base:.2f} | {back:.1f} | "
                         f"{wait:.1f} |")
    with open(args.out + ".md", "w", encoding="utf-8") as md:
        md.write("\n".join(table) + "\n")
    print("\n".join(table))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("perf/ddp_buckets.py: no plot (install Debian's python3-matplotlib)")
        return
    nps = sorted({k[0] for k in results})
    models = args.models.split(",")
    fig, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 4), squeeze=False)
    for ax, model in zip(axes[0], models):
        labels = [CONFIGS[int(i)][0] for i in args.configs.split(",")]
        width = 0.8 / len(nps)
        for i, np in enumerate(nps):
            values = [statistics.median(r[0] for r in results[(np, model, label)]) for label in labels]
            ax.bar([x + i * width for x in range(len(labels))], values, width,
                   label=f"{np} ranks" + (f", 1 per host, {args.net} links" if args.net else ", one host"))
        ax.set_xticks([x + width * (len(nps) - 1) / 2 for x in range(len(labels))])
        ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=7)
        ax.set_ylabel("median step (ms)")
        ax.set_title(f"{model} MLP ({MODELS[model].count(',')} layers)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=110)
    print(f"wrote {args.out}.csv, .md and .png")


if __name__ == "__main__":
    main()

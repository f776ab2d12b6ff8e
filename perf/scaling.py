#!/usr/bin/env python3
"""Projects all-reduce and DDP step times to many ranks from an alpha-beta-gamma model.

  perf/scaling.py --alpha-inter US --beta-inter GBPS --alpha-intra US --beta-intra GBPS
                  --gamma GBPS [--bytes N ...] [--per-host 8] [--compute-ms MS]

alpha: latency per message (microseconds); beta given as a bandwidth (GB/s, 1e9 B/s), inverted
here; gamma: the local reduction's throughput (GB/s). Prints, for 8 to 1024 ranks with
--per-host ranks on each host, the projected time of each algorithm for each message size, and
which wins. The models (docs/scaling.md says where each comes from):
  ring          2(p-1) a + 2 (p-1)/p n b + (p-1)/p n g          (its slowest link: inter-host)
  rd            ceil(log2 p) (a + n b + n g)  (+2 exchanges when p is not a power of two);
                log2 L of them inside a host, log2 H across (ranks numbered host by host)
  hierarchical  2(L-1) a_in + 2 (L-1)/L n b_in + (L-1)/L n g
                + ring over H hosts of n/L bytes, L such rings sharing each host's link:
                  2(H-1) a + 2 (H-1)/H n b + (H-1)/H (n/L) g
  tree2         double binary tree, pipelined: 2 ceil(log2 p) a + 2 n b + n g
"""
import argparse
import math


def ring(p, n, a, b, g):
    return 2 * (p - 1) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g


def rd(p, n, a, b, g):
    steps = math.ceil(math.log2(p)) if p > 1 else 0
    extra = 0 if p & (p - 1) == 0 else 2
    return steps * (a + n * b + n * g) + extra * (a + n * b)


def hierarchical(p, n, L, a, b, a_in, b_in, g):
    H = max(1, p // L)
    inside = 2 * (L - 1) * a_in + 2 * (L - 1) / L * n * b_in + (L - 1) / L * n * g
    across = 2 * (H - 1) * a + 2 * (H - 1) / H * n * b + (H - 1) / H * (n / L) * g if H > 1 else 0.0
    return inside + across


def tree2(p, n, a, b, g):
    return 2 * math.ceil(math.log2(p)) * a + 2 * n * b + n * g if p > 1 else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--alpha-inter", type=float, required=True)
    ap.add_argument("--beta-inter", type=float, required=True)
    ap.add_argument("--alpha-intra", type=float, required=True)
    ap.add_argument("--beta-intra", type=float, required=True)
    ap.add_argument("--gamma", type=float, required=True)
    ap.add_argument("--per-host", type=int, default=8)
    ap.add_argument("--bytes", type=float, nargs="*", default=[8, 64 * 1024, 4 * 2**20, 100 * 2**20])
    ap.add_argument("--ranks", type=int, nargs="*", default=[8, 16, 32, 64, 128, 256, 512, 1024])
    args = ap.parse_args()
    us = 1e-6
    a, a_in = args.alpha_inter * us, args.alpha_intra * us
    b, b_in, g = 1 / (args.beta_inter * 1e9), 1 / (args.beta_intra * 1e9), 1 / (args.gamma * 1e9)
    print("| bytes | ranks | ring | recursive doubling | hierarchical | double binary tree | fastest |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for n in args.bytes:
        for p in args.ranks:
            L = min(args.per_host, p)
            # The flat algorithms run at the pace of their slowest link: inter-host once ranks
            # span hosts. Recursive doubling, with ranks numbered host by host, makes its first
            # log2 L exchanges inside a host and the other log2 H across.
            fa, fb = (a, b) if p > L else (a_in, b_in)
            inner = rd(L, n, a_in, b_in, g)
            t = {"ring": ring(p, n, fa, fb, g),
                 "recursive doubling": inner + (rd(p // L, n, a, b, g) if p > L else 0.0),
                 "hierarchical": hierarchical(p, n, L, a, b, a_in, b_in, g),
                 "double binary tree": tree2(p, n, fa, fb, g)}
            best = min(t, key=t.get)
            cells = " | ".join("%.3g ms" % (t[k] * 1e3) for k in t)
            print("| %s | %d | %s | %s |" % (human(n), p, cells, best))


def human(n):
    for unit, size in (("MiB", 2**20), ("KiB", 1024)):
        if n >= size:
            return "%g %s" % (n / size, unit)
    return "%d B" % n


if __name__ == "__main__":
    main()

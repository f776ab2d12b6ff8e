"""Reads the CSVs the perf/ scripts write, one per program per interleaved round
(FOLDER/NAME1.csv .. NAMEk.csv), and reduces them to a figure per message size.

Shared by perf/overhead.sh, perf/shm-large.sh and perf/shm-crossover.sh. Columns: ringdp-bench
writes time_us_out (and time_us_in), ringdp-raw-allreduce writes time_us.
"""
import csv
import statistics


def times(folder, name, rounds, column="time_us_out"):
    """{bytes: [time of round 1, ..., time of round k]}."""
    out = {}
    for i in range(1, rounds + 1):
        with open(f"{folder}/{name}{i}.csv") as f:
            for row in csv.DictReader(f):
                out.setdefault(int(row["bytes"]), []).append(float(row[column]))
    return out


def medians(folder, name, rounds, column="time_us_out"):
    """{bytes: the median over the rounds}."""
    return {b: statistics.median(v) for b, v in times(folder, name, rounds, column).items()}


def median_difference(folder, name, baseline, rounds, column="time_us_out", baseline_column="time_us"):
    """{bytes: the median over rounds of (name's time - baseline's time in the same round)}.
    Rounds swing together on a noisy machine, so this is steadier than a difference of medians."""
    a = times(folder, name, rounds, column)
    b = times(folder, baseline, rounds, baseline_column)
    return {size: statistics.median(x - y for x, y in zip(a[size], b[size])) for size in a}

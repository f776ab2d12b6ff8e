#!/usr/bin/env bash
# The scripts under scripts/ as users run them, on real runs of the apps:
#   tests/cli/scripts.sh CASE BUILD_DIR SOURCE_ROOT
case_name=$1
build=$(cd "$2" && pwd)
root=$(cd "$3" && pwd)
source "$(dirname "$0")/common.sh"

case "$case_name" in
  plot-bench)
    # Two runs of every all_reduce algorithm: each line has its own colour, style and marker
    # combination, and an algorithm keeps its colour across files (12 lines, 10 default colours).
    for np in 2 4; do
      run_app "$build/apps/bench/ringdp-bench" 120 $np all_reduce -b 8 -e 64 -f 8 -n 1 -w 0 --algo all \
        --csv "$work/np$np.csv"
      [ $rc -eq 0 ] || fail "ringdp-bench on $np ranks exited $rc: $out"
    done
    /usr/bin/python3 - "$root/scripts/plot-bench" "$work/np2.csv" "$work/np4.csv" <<'PY' || fail "plot-bench's lines are not distinguishable"
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader("plot_bench", sys.argv[1])
spec = importlib.util.spec_from_loader("plot_bench", loader)
plot_bench = importlib.util.module_from_spec(spec)
loader.exec_module(plot_bench)
lines = plot_bench.load(sys.argv[2:])
styles = plot_bench.styles(lines)
assert len(lines) >= 10, f"only {len(lines)} lines: the test needs more than one file of several algorithms"
assert len(set(styles)) == len(styles), f"repeated styles among {len(lines)} lines: {styles}"
colour = {}
for (index, label, key, _), (c, _, _) in zip(lines, styles):
    assert colour.setdefault(key, c) == c, f"{key} changes colour between files"
assert len(set(colour.values())) == len(colour), f"two algorithms share a colour: {colour}"
print(f"ok: plot-bench: {len(lines)} lines, {len(colour)} colours (one per algorithm), a line style per file")
PY
    if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
      "$root/scripts/plot-bench" "$work/bench.png" "$work/np2.csv" "$work/np4.csv" >/dev/null || fail "plot-bench failed"
      [ -s "$work/bench.png" ] || fail "plot-bench wrote no PNG"
    fi
    ;;
  demo-banner)
    # scripts/demo's sweep as the demo runs it (4 ranks): its banner must say what the sweep ran.
    source "$root/scripts/lib/demo_sweep.sh"
    out=$(ringdp_demo_sweep "$build/apps/bench/ringdp-bench" timeout 300 "$mpiexec" -n 4 "${launch_args[@]}" 2>&1) ||
      fail "the demo's sweep failed: $out"
    banner=$(head -n 1 <<<"$out")
    run_app "$build/apps/bench/ringdp-bench" 300 4 "${RINGDP_DEMO_SWEEP[@]}" --csv "$work/sweep.csv"
    [ $rc -eq 0 ] || fail "the sweep, run again for its CSV, exited $rc: $out"
    /usr/bin/python3 - "$work/sweep.csv" "$banner" <<'PY' || fail "the demo's banner does not say what the sweep ran: $banner"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if int(r["bytes"]) > 0]
banner = sys.argv[2]
algorithms = list(dict.fromkeys(r["algorithm"] for r in rows))
def text(n):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"
sizes = sorted({int(r["bytes"]) for r in rows})
want = [f"{text(sizes[0])} to {text(sizes[-1])}", f"({len(sizes)} sizes)", "algorithms: " + ", ".join(algorithms)]
missing = [w for w in want if w not in banner]
assert not missing, f"banner lacks {missing}: {banner}"
print(f"ok: the demo's banner: {banner.strip()}")
PY
    ;;
  *) fail "unknown case $case_name" ;;
esac

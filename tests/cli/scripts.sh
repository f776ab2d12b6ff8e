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
  *) fail "unknown case $case_name" ;;
esac

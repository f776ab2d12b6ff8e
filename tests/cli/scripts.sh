#!/usr/bin/env bash
# The scripts under scripts/ as users run them, on real runs of the apps:
#   tests/cli/scripts.sh CASE BUILD_DIR SOURCE_ROOT
# draw-*: scripts/draw-mechanics PICTURE --facts runs the program with RINGDP_TRACE=1 and prints
# what it read from the trace; the checks below hold those facts to what the algorithm defines, so
# a change of the trace format (or of the algorithm) fails here, not silently in a picture. The
# drawing itself needs matplotlib (scripts/ install Debian's python3-matplotlib); without it the test
# reports SKIPPED after checking the facts, never a pass that drew nothing.
case_name=$1
build=$(cd "$2" && pwd)
root=$(cd "$3" && pwd)
source "$(dirname "$0")/common.sh"
draw="$root/scripts/draw-mechanics"

# facts PICTURE: sets $facts (JSON) from a real run, or fails with the script's error.
facts() {
  facts=$(cd "$root" && timeout 180 "$draw" "$1" --build "$build" --facts 2>&1) || fail "draw-mechanics $1 --facts: $facts"
}
# check PICTURE PYTHON: runs PYTHON with `f`, the picture's facts; an assertion fails the test.
check() {
  /usr/bin/python3 -c "import json, sys
f = json.loads(sys.stdin.read())['$1']
$2" <<<"$facts" || fail "the facts of $1 are not what the algorithm defines: $facts"
}
# The picture; SKIPPED (exit 77) where matplotlib is missing.
maybe_draw() {
  if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    (cd "$root" && "$draw" "$1" --build "$build" --out "$work/img") || fail "draw-mechanics $1 failed to draw"
    [ -s "$work/img/$2" ] || fail "draw-mechanics $1 wrote no $2"
    echo "ok: drew $2 ($(stat -c %s "$work/img/$2") bytes)"
  else
    echo "SKIPPED: the facts hold, but no picture was drawn: no python3-matplotlib here (scripts/test installs it)"
    exit 77
  fi
}

case "$case_name" in
  draw-ring)
    facts ring
    check ring '
N = f["ranks"]
assert N == 4, N
phases = [s["phase"] for s in f["steps"]]
assert phases == ["reduce-scatter"] * (N - 1) + ["all-gather"] * (N - 1), phases
for k, s in enumerate(f["steps"]):
    g = k if k < N - 1 else k - (N - 1)   # the step within its phase, from 0
    for m in s["moves"]:
        r = m["rank"]
        assert m["to"] == (r + 1) % N and m["from"] == (r - 1) % N, m
        if s["phase"] == "reduce-scatter":
            want = ((r - g) % N, (r - g - 1) % N, "reduce")
        else:
            want = ((r + 1 - g) % N, (r - g) % N, "store")
        assert (m["send_chunk"], m["recv_chunk"], m["action"]) == want, (s["step"], m, want)
owned = [[c for c in range(N) if len(f["holdings"][N - 1][r][c]) == N] for r in range(N)]
assert owned == [[(r + 1) % N] for r in range(N)], owned
assert all(len(c) == N for row in f["holdings"][-1] for c in row), "not every chunk complete at the end"
print("ok: ring on 4 ranks: 3 reduce-scatter and 3 all-gather steps, chunks as the ring defines")'
    maybe_draw ring ring-steps.png
    ;;
  draw-recursive-doubling)
    facts recursive-doubling
    check recursive-doubling '
four, three = f["runs"]
assert four["ranks"] == 4 and [s["exchanges"] for s in four["steps"]] == [[[0, 1], [2, 3]], [[0, 2], [1, 3]]], four
assert all(not s["transfers"] and not s["idle"] for s in four["steps"]), four
assert three["ranks"] == 3 and len(three["steps"]) == 3, three
fold, exchange, unfold = three["steps"]
assert fold["phase"] == ["fold-in"] and fold["transfers"] == [[0, 1]] and fold["idle"] == [2], fold
assert exchange["exchanges"] == [[1, 2]] and exchange["idle"] == [0], exchange
assert unfold["phase"] == ["unfold"] and unfold["transfers"] == [[1, 0]] and unfold["idle"] == [2], unfold
for world in f["runs"]:
    assert all(h == list(range(world["ranks"])) for h in world["steps"][-1]["holdings"]), world
print("ok: recursive doubling: pairs (0,1)(2,3) then (0,2)(1,3) on 4 ranks; on 3, fold-in 0->1, 1<->2, unfold 1->0")'
    maybe_draw recursive-doubling recursive-doubling.png
    ;;
  draw-buckets)
    facts buckets
    check buckets '
names = [[p["name"] for p in b["parameters"]] for b in f["buckets"]]
# Reverse registration order (backward order); a bucket closes once it holds its cap, 15.7 floats.
assert names == [["4.bias", "4.weight", "2.bias", "2.weight"], ["0.bias", "0.weight"]], names
for b in f["buckets"]:
    at = 0
    for p in b["parameters"]:
        size = 1
        for d in p["shape"]:
            size *= d
        assert p["offset"] == at and p["elements"] == size, (p, at)
        assert p["grad_view"] == [at, at + size] and p["grad_shape"] == p["shape"], p
        at += size
    assert at == b["elements"], b
print("ok: buckets: offsets packed in backward order; every .grad a view of exactly its slice")'
    maybe_draw buckets ddp-bucket-views.png
    ;;
  draw-shared-memory)
    facts shared-memory
    check shared-memory '
N = f["ranks"]
assert N == 4 and [r["elements"] for r in f["rounds"]] == [[0, 8192], [8192, 16384]], f["rounds"]
for r in f["rounds"]:
    first, end = r["elements"]
    chunks = r["chunks"]
    assert [c["chunk"] for c in chunks] == list(range(N)), chunks
    assert all(c["reducer"] == c["chunk"] == c["into_slot_of"] and c["from_slots"] == N for c in chunks), chunks
    bounds = [c["elements"] for c in chunks]
    assert bounds[0][0] == first and bounds[-1][1] == end, bounds
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:])), bounds
    assert all(b % 16 == 0 for pair in bounds for b in pair), "chunk bounds off 64-byte lines"
    want = sorted((rank, c, c) for rank in range(N) for c in range(N) if c != rank)
    got = sorted((cp["rank"], cp["chunk"], cp["from"]) for cp in r["copies"])
    assert got == want, (got, want)
print("ok: shared memory: 2 rounds; rank r reduces chunk r of every slot, the others copy it from its slot")'
    maybe_draw shared-memory shared-memory-slots.png
    ;;
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
    else
      echo "SKIPPED: the styles hold, but no PNG was drawn: no python3-matplotlib here (scripts/test installs it)"
      exit 77
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

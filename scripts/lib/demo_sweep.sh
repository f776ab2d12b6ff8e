# The demo's bandwidth sweep, and the banner that says what it ran. Sourced by scripts/demo; the
# cli suite (tests/cli/scripts.sh, case demo-banner) runs it and checks the banner against the
# sweep's own CSV. The banner is read from that CSV after the run, not written by hand: a
# hand-written one promised "ring and recursive doubling, 8 B to 4 MiB" while the sweep ran six
# algorithms up to 2 MiB (-f 8 from 8 B never lands on 4 MiB), and nothing noticed.

RINGDP_DEMO_SWEEP=(all_reduce -b 8 -e 2M -f 8 -n 10 -w 2 --algo all)

# 8 -> "8 B", 4096 -> "4 KiB", 2097152 -> "2 MiB" (the largest unit that divides it).
ringdp_bytes_text() {
  local n=$1 unit shift
  for unit in GiB:30 MiB:20 KiB:10; do
    shift=${unit#*:} unit=${unit%:*}
    if [ "$n" -ge $((1 << shift)) ] && [ $((n % (1 << shift))) -eq 0 ]; then
      echo "$((n >> shift)) $unit"
      return
    fi
  done
  echo "$n B"
}

# What a ringdp-bench CSV holds, in one line: collective, type and op, the sizes, the algorithms
# in the order they ran, and how many ranks.
ringdp_sweep_banner() {
  local csv=$1 facts
  # Columns by their header's names: the CSV gains columns (ran did), and a position would shift.
  facts=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) at[$i] = i; next }
    $at["bytes"] > 0 {
      b = $at["bytes"] + 0; a = $at["algorithm"]
      if (!(a in seen)) { seen[a] = 1; algos = algos (algos ? ", " : "") a }
      if (!(b in sizes)) { sizes[b] = 1; count++ }
      if (min == "" || b < min) min = b
      if (b > max) max = b
      what = $at["collective"] " " $at["dtype"] " " $at["op"]; ranks = $at["ranks"] }
    END { print what "|" min "|" max "|" count "|" algos "|" ranks }' "$csv")
  IFS='|' read -r what min max count algos ranks <<<"$facts"
  [ -n "$algos" ] || { echo "(the sweep wrote no rows to $csv)"; return 1; }
  echo "$what on $ranks ranks, $(ringdp_bytes_text "$min") to $(ringdp_bytes_text "$max") ($count sizes);" \
    "algorithms: $algos"
}

# ringdp_demo_sweep BENCH LAUNCHER...: runs RINGDP_DEMO_SWEEP, then prints the banner (from the
# run's CSV) above the run's table.
ringdp_demo_sweep() {
  local bench=$1 tmp status=0
  shift
  tmp=$(mktemp -d)
  "$@" "$bench" "${RINGDP_DEMO_SWEEP[@]}" --csv "$tmp/sweep.csv" >"$tmp/table" || status=$?
  if [ $status -eq 0 ]; then
    echo "   ($(ringdp_sweep_banner "$tmp/sweep.csv"); the last table gives each one's bus bandwidth as a ratio of native's)"
  fi
  cat "$tmp/table"
  rm -rf "$tmp"
  return $status
}

#!/usr/bin/env bash
# Large all-reduces across hosts made of network namespaces (tests/net/cluster.sh) against the
# link's rate (issue #39 item 2; docs/lab/benchmarks.md, "The link's rate across hosts"). Per layout
# (hosts x ranks per host), in each of ROUNDS interleaved rounds: ringdp-bench --algo all and
# --algo auto at 16 and 64 MiB (float32 sum, out of place and in place) as users launch it (ringdp
# then runs Open MPI's TCP transport without emulated RDMA, comm/bootstrap/open_mpi_defaults.h), and the
# same with btl_tcp_flags set back to Open MPI's own default by the launch; on 2 hosts x 1,
# also the raw two-way exchange (perf/mpi_duplex.cpp) both ways. Prints, per algorithm and
# size, medians out of place / in place of: `link`, the bytes one host's link carries each way by
# the algorithm's schedule, per second, over the rate (1 = the link; the goal is >= 0.9), where
# the schedule fixes them; and busbw over the rate (the same where each rank has a link of its
# own). The bench steps by x4 from the first size to the last. The variant `ucx` runs the same
# bench with --backend ucx (MPI only starts the job; UCX's TCP transport carries every byte across
# hosts, since each host has its own IPC namespace). Needs root; about 4 minutes per layout and
# round at 1gbit on 2 cores for the two MPI variants, 1 more for UCX. Not a test.
#   perf/link-rate.sh [--rate 1gbit] [--layouts "2x1 4x1 2x2 4x2"] [--rounds 3] [--sizes "16M 64M"]
#                     [--variants "ringdp openmpi ucx"]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
rate=1gbit layouts="2x1 4x1 2x2 4x2" rounds=3 sizes="16M 64M" variants="ringdp openmpi ucx"
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --layouts) layouts=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    *) echo "link-rate.sh: unknown option '$1' (expected --rate, --layouts, --rounds, --sizes or --variants)" >&2; exit 2 ;;
  esac
done
case "$rate" in
  *gbit) bytes_per_s=$(( ${rate%gbit} * 125000000 )) ;;
  *mbit) bytes_per_s=$(( ${rate%mbit} * 125000 )) ;;
  *) echo "link-rate.sh: --rate '$rate': expected NUMBERgbit or NUMBERmbit" >&2; exit 2 ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RINGDP_NET_PREFIX=rdpn-l
open_mpi_default=send,put,inplace,need-ack,need-csum,hetero-rdma
ringdp_flags=$(sed -n 's/.*kTcpFlags = "\(.*\)";/\1/p' comm/bootstrap/open_mpi_defaults.h)
[ -n "$ringdp_flags" ] || { echo "link-rate.sh: kTcpFlags not found in comm/bootstrap/open_mpi_defaults.h" >&2; exit 2; }
o=$(mktemp -d)
trap 'rm -rf "$o"' EXIT
first=${sizes%% *} last=${sizes##* }
echo "# load before: $(uptime | sed 's/.*load average/load average/')"
for layout in $layouts; do
  hosts=${layout%x*} per_host=${layout#*x}
  run() { tests/net/cluster.sh run --hosts "$hosts" --ranks-per-host "$per_host" --rate "$rate" --timeout 900 -- "$@"; }
  for i in $(seq "$rounds"); do
    for flags in $variants; do
      case "$flags" in
        ringdp | ucx) unset OMPI_MCA_btl_tcp_flags ;;
        openmpi) export OMPI_MCA_btl_tcp_flags=$open_mpi_default ;;
        *) echo "link-rate.sh: --variants '$flags': expected ringdp, openmpi or ucx" >&2; exit 2 ;;
      esac
      backend=mpi
      [ "$flags" = ucx ] && backend=ucx
      for algo in all auto; do
        run "$build/apps/bench/ringdp-bench" all_reduce --backend "$backend" --algo "$algo" -b "$first" -e "$last" \
          -f 4 -n 3 -w 1 --csv "$o/$layout-$flags-$algo$i.csv" >/dev/null
      done
      if [ "$hosts" = 2 ] && [ "$per_host" = 1 ] && [ "$flags" != ucx ]; then
        # Raw MPI does not go through ringdp's MPI_Init: give it ringdp's value by hand.
        [ "$flags" = ringdp ] && export OMPI_MCA_btl_tcp_flags=$ringdp_flags
        for size in $sizes; do
          run "$build/perf/ringdp-mpi-duplex" "$(numfmt --from=iec "$size")" 32 3 >>"$o/$layout-$flags-duplex$i.txt"
        done
      fi
    done
    unset OMPI_MCA_btl_tcp_flags
  done
done
echo "# load after: $(uptime | sed 's/.*load average/load average/')"
/usr/bin/python3 - "$o" "$rounds" "$bytes_per_s" "$rate" "$layouts" "$variants" <<'P'
import csv, glob, math, re, statistics, sys
o, rounds, rate, rate_name, layouts = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5].split()
names = {"ringdp": "MPI, ringdp's btl_tcp_flags", "openmpi": "MPI, Open MPI's default (put)", "ucx": "UCX (--backend ucx)"}
flags_name = {v: names[v] for v in sys.argv[6].split()}


def link_bytes(algorithm, hosts, per_host, size):
    """Bytes one host's link carries each way in one all-reduce of `size`, where the schedule says
    (ranks placed host by host, as the harness does); None where it depends on the library."""
    n = hosts * per_host
    if algorithm == "auto":  # what auto picks at these sizes (comm/algorithms/algorithm_choice.cpp)
        algorithm = "hierarchical" if per_host > 1 else "ring"
    if algorithm == "hierarchical" and per_host == 1:
        algorithm = "ring"  # one rank per host: its cross-host stage is the whole job
    if algorithm == "rabenseifner" and per_host == 1 and hosts & (hosts - 1) == 0:
        algorithm = "ring"  # halving then doubling: the ring's 2(N-1)/N of the buffer per rank
    if algorithm == "ring":  # one ring edge crosses each host's link each way, 2(N-1) steps of size/N
        return 2 * (n - 1) / n * size
    if algorithm == "hierarchical":  # every local rank's shard all-reduced across hosts by a ring
        return 2 * (hosts - 1) / hosts * size
    if algorithm == "recursive_doubling" and n & (n - 1) == 0 and per_host & (per_host - 1) == 0:
        return per_host * math.log2(hosts) * size  # whole buffers, every local rank, each cross-host round
    return None


def cell(values):
    return f"{statistics.median(values[0]):.2f} / {statistics.median(values[1]):.2f}" if values[0] else "-"


for layout in layouts:
    hosts, per_host = (int(v) for v in layout.split("x"))
    print(f"# all_reduce float32 sum across {hosts} hosts x {per_host} ranks, links {rate_name}; median of {rounds} "
          "interleaved rounds, out of place / in place")
    print("# link: the bytes a host's link carries each way by the algorithm's schedule, per second, over the rate;")
    print("# busbw: ringdp-bench's busbw over the rate (the link's share where each rank's link is its own)")
    print(f"{'algorithm':<20} {'MiB':>4}  " + "  ".join(f"{flags_name[f] + ': link':>33} {'busbw':>11}" for f in flags_name))
    rows = {}
    for flags in flags_name:
        for path in glob.glob(f"{o}/{layout}-{flags}-*.csv"):
            auto = "-auto" in path
            for row in csv.DictReader(open(path)):
                name = "auto" if auto else row["algorithm"]
                size = int(row["bytes"])
                link = link_bytes(name, hosts, per_host, size)
                cells = rows.setdefault((name, size), {}).setdefault(flags, ([], [], [], []))
                for k, way in enumerate(("out", "in")):
                    cells[2 + k].append(float(row[f"busbw_{way}"]) * 1e9 / rate)
                    if link is not None:
                        cells[k].append(link / (float(row[f"time_us_{way}"]) * 1e-6) / rate)
    for (name, size), by_flags in sorted(rows.items()):
        text = []
        for flags in flags_name:
            c = by_flags.get(flags, ([], [], [], []))
            text.append(f"{cell(c[:2]):>33} {cell(c[2:]):>11}")
        print(f"{name:<20} {size >> 20:>4}  " + "  ".join(text))
    for flags in flags_name:
        speeds = {}
        for path in glob.glob(f"{o}/{layout}-{flags}-duplex*.txt"):
            for line in open(path):
                m = re.match(r"waitall: (\d+) bytes each way as (\d+) message.*, ([\d.]+) MB/s", line)
                if m:
                    speeds.setdefault((int(m[1]), int(m[2])), []).append(float(m[3]) * 1e6 / rate)
        for (size, pieces), values in sorted(speeds.items()):
            print(f"# raw MPI two-way exchange, {flags_name[flags]}: {size >> 20} MiB each way as {pieces} "
                  f"message(s): {statistics.median(values):.2f} of the rate (runs {min(values):.2f}-{max(values):.2f})")
    print()
P

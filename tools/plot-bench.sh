#!/bin/sh
# Plots loadgen's JSON lines: calls/s and p99 latency against concurrency,
# one line per client, one column per message size. Installs gnuplot-nox
# and python3 from Debian's archive if they are missing.
#
#   bazel run //bench:loadgen -- --server_cpu=0 --client_cpu=1 | tee bench.txt
#   tools/plot-bench.sh bench.txt docs/performance.png
set -eu
in=${1:?usage: tools/plot-bench.sh LOADGEN_OUTPUT OUT.png}
out=${2:?usage: tools/plot-bench.sh LOADGEN_OUTPUT OUT.png}
need=""
command -v gnuplot >/dev/null 2>&1 || need="$need gnuplot-nox"
command -v python3 >/dev/null 2>&1 || need="$need python3"
if [ -n "$need" ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get install -y -q $need >/dev/null
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$in" "$dir" <<'PY'
import json, sys, collections
rows = [json.loads(l[5:]) for l in open(sys.argv[1]) if l.startswith("JSON ")]
if not rows:
    sys.exit("no JSON lines in " + sys.argv[1])
series = collections.defaultdict(list)
for r in rows:
    series[(r["size"], r["client"])].append((r["concurrency"], r["qps"], r["p99_us"]))
sizes = sorted({s for s, _ in series})
names = {"ringrpc": "ringrpc (coroutine)", "ringrpc_cb": "ringrpc (callback)",
         "ringrpc_sync": "ringrpc (blocking)", "grpc1": "grpc++ 1 channel",
         "grpcK": "grpc++ K channels", "transport": "ringrpc transport, no channel (floor)",
         "tcp": "raw TCP ping-pong (1 in flight)"}
with open(sys.argv[2] + "/plot.gp", "w") as gp:
    gp.write('set terminal pngcairo size %d,800 font ",10"\n' % (400 * max(3, len(sizes))))
    gp.write('set output "%s/out.png"\n' % sys.argv[2])
    gp.write("set multiplot layout 2,%d\nset logscale x 2\nset key top left\nset grid\n" % len(sizes))
    for metric, col, label in (("qps", 2, "calls/s"), ("p99", 3, "p99 latency, us")):
        for size in sizes:
            plots = []
            for client in ("ringrpc", "ringrpc_cb", "ringrpc_sync", "grpc1", "grpcK", "transport", "tcp"):
                pts = sorted(series.get((size, client), []))
                if not pts:
                    continue
                f = "%s/%s_%d.dat" % (sys.argv[2], client, size)
                with open(f, "w") as d:
                    for p in pts:
                        d.write("%d %f %f\n" % p)
                plots.append('"%s" using 1:%d with linespoints title "%s"' % (f, col, names[client]))
            gp.write('set title "%s, %d B messages"\nset xlabel "concurrency"\nset ylabel "%s"\n'
                     % (label, size, label))
            gp.write("plot " + ", ".join(plots) + "\n")
    gp.write("unset multiplot\n")
PY
gnuplot "$dir/plot.gp"
cp "$dir/out.png" "$out"
echo "wrote $out"

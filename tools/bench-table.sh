#!/bin/sh
# Turns loadgen's JSON lines into the markdown table README.md and
# docs/performance.md show: per size and concurrency, client CPU per call
# of each ringrpc form and of grpc++ (allocations and system calls per call
# beside), and the coroutine form's ratios to grpc++ (CPU per call, calls/s,
# p50). Needs python3 (installed from Debian's archive if missing).
#
#   bazel run //bench:loadgen -- --clients=ringrpc,ringrpc_cb,ringrpc_sync,grpc1,transport \
#       --concurrency=1,16,128 --sizes=0,1024,65536,1048576 --server_cpu=0 \
#       --client_cpu=1 | tee out.txt
#   tools/bench-table.sh out.txt
set -eu
in=${1:?usage: tools/bench-table.sh LOADGEN_OUTPUT}
if ! command -v python3 >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get install -y -q python3 >/dev/null
fi
python3 - "$in" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    if line.startswith("JSON "):
        r = json.loads(line[5:])
        rows[(r["type"], r["size"], r["concurrency"], r["client"])] = r
if not rows:
    sys.exit("no JSON lines in " + sys.argv[1])
def size_name(n):
    return "%d MiB" % (n >> 20) if n >= 1 << 20 else "%d KiB" % (n >> 10) if n >= 1024 else "%d B" % n
def cell(r):
    if r is None:
        return "-"
    s = "%.1f" % r["cpu_us_per_call"]
    extra = ["%.0f" % r["allocs_per_call"]]
    if r.get("syscalls_per_call", -1) >= 0:
        extra.append("%.1f" % r["syscalls_per_call"])
    return "%s (%s)" % (s, ", ".join(extra))
# The transport floor (loadgen's "transport" client), when the run had it:
# a column of its own and the coroutine form's CPU per call over it.
floor = any(k[3] == "transport" for k in rows)
print("| type | size | concurrency | coroutine | callback | blocking | grpc++ 1ch "
      + ("| transport floor " if floor else "")
      + "| CPU/call coroutine / grpc++ | calls/s | p50 |"
      + (" CPU/call coroutine / floor | floor / grpc++ |" if floor else ""))
print("|---" * (14 if floor else 10) + "|")
for key in sorted({k[:3] for k in rows}):
    get = lambda c: rows.get(key + (c,))
    co, g, t = get("ringrpc"), get("grpc1"), get("transport")
    ratio = lambda a, b, f: "%.2fx" % (a[f] / b[f]) if a and b and b[f] else "-"
    cells = [key[0], size_name(key[1]), str(key[2]), cell(co), cell(get("ringrpc_cb")),
             cell(get("ringrpc_sync")), cell(g)]
    if floor:
        cells.append(cell(t))
    cells += [ratio(co, g, "cpu_us_per_call"), ratio(co, g, "qps"), ratio(co, g, "p50_us")]
    if floor:
        cells += [ratio(co, t, "cpu_us_per_call"), ratio(t, g, "cpu_us_per_call")]
    print("| " + " | ".join(cells) + " |")
PY

#!/bin/sh
# Turns loadgen's JSON lines into the markdown table README.md and
# docs/performance.md show: per size and concurrency, client CPU per call
# of each ringrpc form and of grpc++ (allocations and system calls per call
# beside), and the coroutine form's ratios to grpc++ (CPU per call, calls/s,
# p50). Needs python3 (installed from Debian's archive if missing).
#
#   bazel run //bench:loadgen -- --clients=ringrpc,ringrpc_cb,ringrpc_sync,grpc1 \
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
print("| type | size | concurrency | coroutine | callback | blocking | grpc++ 1ch "
      "| CPU/call coroutine / grpc++ | calls/s | p50 |")
print("|---|---|---|---|---|---|---|---|---|---|")
for key in sorted({k[:3] for k in rows}):
    get = lambda c: rows.get(key + (c,))
    co, g = get("ringrpc"), get("grpc1")
    ratio = lambda f: "%.2fx" % (co[f] / g[f]) if co and g and g[f] else "-"
    print("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
        key[0], size_name(key[1]), key[2], cell(co), cell(get("ringrpc_cb")),
        cell(get("ringrpc_sync")), cell(g), ratio("cpu_us_per_call"), ratio("qps"),
        ratio("p50_us")))
PY

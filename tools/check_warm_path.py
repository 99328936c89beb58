#!/usr/bin/env python3
"""Checks that the pool's warm checkout+return path has no atomic
read-modify-write instruction.

Disassembles ringrpc::pool::WarmPairForDisassembly in the benchmark binary
and every function it reaches by call or jump (transitively, within the
binary), and fails if any holds a lock-prefixed instruction or xchg (which
is implicitly locked). Calls into shared libraries (PLT) are listed: there
must be none on this path.

Usage: tools/check_warm_path.py bazel-bin/pool/bench/pool_benchmark
"""
import re
import subprocess
import sys

binary = sys.argv[1]
dump = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", binary],
                      check=True, capture_output=True, text=True).stdout

functions = {}   # name -> instructions
starts = {}      # start address -> name
name = None
for line in dump.splitlines():
    m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
    if m:
        name = m.group(2)
        functions[name] = []
        starts[int(m.group(1), 16)] = name
    elif name and line.strip():
        functions[name].append(line)

root = next((f for f in functions if f.startswith("ringrpc::pool::WarmPairForDisassembly")), None)
if root is None:
    sys.exit("WarmPairForDisassembly not found in " + binary)

seen, todo, bad, plt = set(), [root], [], set()
while todo:
    f = todo.pop()
    if f in seen:
        continue
    seen.add(f)
    for ins in functions.get(f, []):
        # lock prefix, or xchg with a memory operand (implicitly locked;
        # "xchg %ax,%ax" is a nop).
        if re.search(r"\block\b", ins) or re.search(r"\bxchg\b.*\(", ins):
            bad.append((f, ins.strip()))
        m = re.search(r"\b(call|jmp)\s+([0-9a-f]+) <(.*)>\s*$", ins)
        if m:
            target = starts.get(int(m.group(2), 16))
            if target is None:
                continue  # a jump inside the same function
            if target.endswith("@plt"):
                plt.add(target)
            elif target != f:
                todo.append(target)

print("warm path (every function reachable from the warm pair, cold branches "
      "included):")
print(f"  {len(seen)} functions, "
      f"{sum(len(functions.get(f, [])) for f in seen)} instructions")
for f in sorted(seen):
    print("  ", f[:120])
if plt:
    print("calls into shared libraries:", ", ".join(sorted(plt)))
if bad:
    print("ATOMIC RMW on the warm path:")
    for f, ins in bad:
        print("  ", f[:80], ":", ins)
    sys.exit(1)
print("no lock-prefixed or xchg instruction on the warm path")

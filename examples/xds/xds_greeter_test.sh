#!/bin/sh
# The xds example's calls reach backend 1, then follow the EDS update to
# backend 2.
set -eu
out=$(examples/xds/xds_greeter)
echo "$out"
echo "$out" | grep -q "^xds:///greeter: Hello xds from backend 1$"
echo "$out" | grep -q "^after the EDS update: Hello xds from backend 2$"
echo "$out" | grep -q "xds replies correct"

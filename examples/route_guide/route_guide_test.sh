#!/bin/sh
# The route_guide example runs all four call types, in every form, against its embedded
# grpc++ server and every answer is right.
set -eu
out=$(examples/route_guide/route_guide)
echo "$out"
echo "$out" | grep -q '^ok   GetFeature(2,3) (blocking): "Feature 2,3"$'
echo "$out" | grep -q '^ok   ListFeatures(0,0)-(4,4) (reactor): 22 features$'
echo "$out" | grep -q '^ok   RecordRoute (reactor): 5 points, '
echo "$out" | grep -q '^ok   RouteChat (reactor): got back first@(1,1), second@(1,2)$'
echo "$out" | grep -q '^ok   coroutines: Feature 5,6 | co one$'
echo "$out" | grep -q '^ok   GetFeature x100 (completion queue): 100 right, 0 wrong$'
echo "$out" | grep -q '^ok   RouteChat (completion queue): cq one$'
if echo "$out" | grep -q '^FAIL'; then exit 1; fi
echo "$out" | grep -q "all answers correct"

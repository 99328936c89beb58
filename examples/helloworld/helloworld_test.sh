#!/bin/sh
# The main program runs against its embedded grpc++ server and every reply
# is right.
set -eu
out=$(examples/helloworld/helloworld)
echo "$out"
echo "$out" | grep -q "^blocking:  Hello blocking$"
echo "$out" | grep -q "^callback:  Hello callback$"
echo "$out" | grep -q "^coroutine: Hello coroutine | Hello stream #1 | Hello stream #2 | Hello stream #3$"
echo "$out" | grep -q "all replies correct"

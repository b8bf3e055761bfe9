#!/bin/sh
# build.sh REF [OUT] builds refgame, a game-shaped server on the C
# reference netcode library (github.com/mas-bandwidth/netcode) checked out
# at REF, into OUT (default ./refgame), with the reference's release flags
# and 8,192 slots (MAX_CLIENTS). netcode.h defines NETCODE_MAX_CLIENTS
# unconditionally, so a copy of netcode.c and netcode.h with the define
# made overridable goes into a temporary directory; REF is not changed.
#
#   scripts/refgame/build.sh ~/src/netcode /tmp/refgame
#   taskset -c 1 /tmp/refgame 127.0.0.1:40000 $KEY 6e6574626e6368 8192 &
#   netbench -mode game -sweep -target 127.0.0.1:40000 -key $KEY -protocol 6e6574626e6368
set -eu
if [ $# -lt 1 ]; then
	echo "usage: $0 REF [OUT]" >&2
	exit 2
fi
ref=$1
out=${2:-refgame}
here=$(cd "$(dirname "$0")" && pwd)
max=${MAX_CLIENTS:-8192}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$ref/netcode.c" "$tmp/netcode.c"
sed 's/^#define NETCODE_MAX_CLIENTS[[:space:]]*256$/#ifndef NETCODE_MAX_CLIENTS\n#define NETCODE_MAX_CLIENTS 256\n#endif/' \
	"$ref/netcode.h" >"$tmp/netcode.h"
grep -q '^#ifndef NETCODE_MAX_CLIENTS' "$tmp/netcode.h" || {
	echo "$0: could not make NETCODE_MAX_CLIENTS overridable in $ref/netcode.h" >&2
	exit 1
}
# The reference's CMake Release flags.
flags="-std=gnu99 -O3 -DNDEBUG -DNETCODE_RELEASE -ffast-math -DNETCODE_MAX_CLIENTS=$max"
cc=${CC:-cc}
$cc $flags -w -I"$ref/sodium" -c "$ref/sodium/sodium.c" -o "$tmp/sodium.o"
$cc $flags -Wall -Wextra -I"$tmp" -I"$ref/sodium" -c "$tmp/netcode.c" -o "$tmp/netcode.o"
$cc $flags -Wall -Wextra -I"$tmp" -c "$here/refgame.c" -o "$tmp/refgame.o"
$cc -o "$out" "$tmp/refgame.o" "$tmp/netcode.o" "$tmp/sodium.o" -lm
echo "built $out (NETCODE_MAX_CLIENTS=$max)"

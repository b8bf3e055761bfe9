#!/usr/bin/env bash
# compare.sh runs netbench's standard comparison matrix: every server
# receive mode (mmsg, block, xnet, single) x payload (64, 1200 bytes) x
# clients (256, 4096), each as a -sweep for the highest sustained rate. It
# writes one JSON (and the console output) per run into DIR, then DIR/table.md
# (ratios to mmsg at the same payload and client count) and DIR/latency.svg.
#
#   scripts/compare.sh [DIR] [extra netbench flags...]
#   scripts/compare.sh results/today -step 3s
#
# DIR defaults to bench-results/<timestamp>. Sixteen sweeps take a while
# (several minutes with the default 2 s steps). Every run uses the
# single-loop server (-shards 0): the comparison sockets (xnet, single)
# cannot be given to the sharded one, and the modes should differ only in
# their socket.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/bench-results/$(date +%Y%m%d-%H%M%S)}
shift || true
mkdir -p "$out"
out=$(cd "$out" && pwd)

cd "$root"
go build -o "$out/netbench" ./cmd/netbench

for recv in mmsg block xnet single; do
	for size in 64 1200; do
		for clients in 256 4096; do
			name="$recv-${size}B-${clients}c"
			echo "== $name" >&2
			"$out/netbench" -sweep -quiet -shards 0 -recv "$recv" -size "$size" -clients "$clients" \
				-label "$name" -json "$out/$name.json" "$@" | tee "$out/$name.txt"
		done
	done
done

go run ./scripts/ratiotable "$out"/*.json >"$out/table.md"
"$out/netbench" -plot "$out/latency.svg" "$out"/*.json
cat "$out/table.md"
echo "results in $out" >&2

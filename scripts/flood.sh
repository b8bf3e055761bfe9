#!/usr/bin/env bash
# flood.sh runs netbench's flood experiment: ROUNDS rounds of three runs,
# 256 clients playing at 60 Hz with no flood, with invalid connection
# requests flooding the server, and with the same flood aimed at a drop
# sink instead (the control: the flood's cost to the load generator's core
# without any to the server). Rounds alternate the kinds so that drift in
# the machine's speed touches all three. It writes every run's JSON into
# DIR and prints DIR/table.md (medians and p99 ratios).
#
#   scripts/flood.sh [DIR] [ROUNDS] [extra netbench flags...]
#   scripts/flood.sh /tmp/flood 5 -duration 8s -flood-priority normal
#
# KINDS picks the runs of a round (default "none server sink"); "noshed"
# adds the flood at a server with its kernel shedding off (-no-shed):
#   KINDS="none server noshed sink" scripts/flood.sh /tmp/flood 5
#
# DIR defaults to bench-results/flood-<timestamp>, ROUNDS to 5.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/bench-results/flood-$(date +%Y%m%d-%H%M%S)}
rounds=${2:-5}
shift 2 || shift $# || true
mkdir -p "$out"
out=$(cd "$out" && pwd)

cd "$root"
go build -o "$out/netbench" ./cmd/netbench

for round in $(seq 1 "$rounds"); do
	for kind in ${KINDS:-none server sink}; do
		name="r$round-$kind"
		case "$kind" in
		none) flags=(-mode echo) ;;
		server | sink) flags=(-mode flood -flood-at "$kind") ;;
		noshed) flags=(-mode flood -flood-at server -no-shed) ;;
		*) echo "flood.sh: unknown kind $kind (want none, server, noshed or sink)" >&2; exit 2 ;;
		esac
		echo "== $name" >&2
		"$out/netbench" -quiet "${flags[@]}" -label "$name" -json "$out/$name.json" "$@" >"$out/$name.txt"
	done
done

go run ./scripts/floodtable "$out"/r*.json >"$out/table.md"
cat "$out/table.md"
echo "results in $out" >&2

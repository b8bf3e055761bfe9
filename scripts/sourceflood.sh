#!/usr/bin/env bash
# sourceflood.sh reruns issue 25's F9 flood: junk payload packets of 1,119
# B from ONE connected player's address (spoofed with a raw IPv4 socket on
# loopback, as fast as the flood thread can send) beside a load of
# players (64 at 60 Hz by default), against a server with its kernel
# per-source limit off, on, and asked for where eBPF cannot load (the
# server child runs without CAP_BPF: the fallback), plus runs without a
# flood and with the flood at a drop sink (the control). Rounds alternate
# the kinds so that drift in the machine's speed touches all of them. It
# writes every run's JSON into DIR and prints DIR/table.md (medians).
# Needs root (the raw socket; eBPF).
#
#   scripts/sourceflood.sh [DIR] [ROUNDS] [extra netbench flags...]
#   scripts/sourceflood.sh /tmp/sf 5 -duration 8s -flood-size 9000
#
# KINDS picks the runs of a round (default "none off on fallback sink").
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/bench-results/sourceflood-$(date +%Y%m%d-%H%M%S)}
rounds=${2:-5}
shift 2 || shift $# || true
mkdir -p "$out"
out=$(cd "$out" && pwd)

cd "$root"
go build -o "$out/netbench" ./cmd/netbench

base=(-clients 64 -flood-kind payload)
for round in $(seq 1 "$rounds"); do
	for kind in ${KINDS:-none off on fallback sink}; do
		name="r$round-$kind"
		case "$kind" in
		none) flags=(-mode echo) ;;
		off) flags=(-mode flood -source-limit off) ;;
		on) flags=(-mode flood -source-limit on) ;;
		fallback) flags=(-mode flood -source-limit try -no-bpf) ;;
		sink) flags=(-mode flood -flood-at sink) ;;
		*) echo "sourceflood.sh: unknown kind $kind (want none, off, on, fallback or sink)" >&2; exit 2 ;;
		esac
		echo "== $name" >&2
		"$out/netbench" -quiet "${base[@]}" "${flags[@]}" -label "$name" -json "$out/$name.json" "$@" >"$out/$name.txt"
	done
done

go run ./scripts/floodtable "$out"/r*.json >"$out/table.md"
cat "$out/table.md"
echo "results in $out" >&2

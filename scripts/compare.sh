#!/usr/bin/env bash
# compare.sh runs netbench's comparisons and writes one table with ratios.
#
#   scripts/compare.sh [DIR] [extra netbench flags...]
#   SUITE=all ROUNDS=5 scripts/compare.sh results/today -step 3s
#
# SUITE picks what runs (default "game"):
#
#   game  ROUNDS rounds (default 3), each with, netcode then -bare (the
#         protocol-free control) one after the other so that both meet the
#         same machine:
#           - the game-mode player sweep (-mode game -sweep: 60 Hz, 300-byte
#             snapshots, 64-byte inputs, from 256 players up);
#           - fixed-rate game runs of 1 and 256 players at 60 Hz and of
#             4,096 at GAME_TICK_4096 Hz (default 20: 4,096 players at 60 Hz
#             are more than one core carries);
#           - fixed-rate echo runs of 1, 256 and 4,096 clients at ECHO_RATE
#             Hz (default 20) with 100-byte payloads.
#         DIR/table.md (scripts/baretable) has, per shape, the median over
#         rounds with its spread, netcode beside bare and their ratio: what
#         each carried, p99, loss, each side's CPU per datagram and share
#         of its core, the time each waited for its core (other
#         processes), which side was saturated and the load averages.
#   recv  the receive-mode matrix: every server receive mode (mmsg, block,
#         xnet, single) x payload (64, 1200 bytes) x clients (256, 4096),
#         each a -sweep for the highest sustained rate; DIR/recv-table.md
#         (scripts/ratiotable) has ratios to mmsg at the same payload and
#         client count.
#   net   loopback against the veth testbed (scripts/testbed.sh): ROUNDS
#         rounds, each alternating loopback and testbed runs of the game
#         sweep and the echo sweep (-sweep -size ECHO_SIZE, default 64),
#         netcode then -bare, each into DIR/net-*.json. Needs TESTBED=1 (it runs inside the testbed; the
#         loopback runs use the load namespace's own loopback).
#   xdp   the server's datagram path on the testbed: ROUNDS rounds, each
#         alternating sockets, AF_XDP (-xdp XDP_MODE, default native) and
#         the protocol-free control (-bare) on sockets, for the game sweep
#         and the echo sweep (-sweep -size ECHO_SIZE), each into
#         DIR/xdp-*.json. Needs TESTBED=1. Pass -load-xdp native among
#         the flags to put the load on AF_XDP too, in every run. The echo
#         sweep's 256 clients count their replies unopened but one in
#         ECHO_SAMPLE (default 8; netbench's own default opens them all
#         up to 256 clients), as the game sweep's do.
#   all   game and recv.
#
# TESTBED=1 runs the whole suite inside a testbed of its own
# (scripts/testbed.sh, at most TESTBED_TIMEOUT seconds, default 7200):
# every run gets $TESTBED_FLAGS, so game and recv measure the testbed
# instead of loopback. TESTBED_XDP_FLAGS (empty by default) is added to
# every testbed run: the hook for the server's AF_XDP path (-xdp).
#
# Every run writes its JSON and console output into DIR, with the
# machine's uptime before it in DIR/uptime.log; DIR/latency.svg plots
# the latency curves. DIR defaults to bench-results/<timestamp>. Every
# server runs in the manual mode (-shards 0), driven by the application
# goroutine as a game loop drives it; pass -shards 1 among the flags for
# the default mode.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ ${TESTBED:-} == 1 && -z ${TESTBED_FLAGS:-} ]]; then
	exec "$root/scripts/testbed.sh" -t "${TESTBED_TIMEOUT:-7200}" -- env TESTBED=1 "$0" "$@"
fi
out=${1:-$root/bench-results/$(date +%Y%m%d-%H%M%S)}
shift || true
mkdir -p "$out"
out=$(cd "$out" && pwd)
suite=${SUITE:-game}
rounds=${ROUNDS:-3}
echo_rate=${ECHO_RATE:-20}
tick_4096=${GAME_TICK_4096:-20}
duration=${DURATION:-10s}

cd "$root"
go build -o "$out/netbench" ./cmd/netbench

# The testbed's flags (empty on loopback).
tb_flags=()
if [[ -n ${TESTBED_FLAGS:-} ]]; then
	read -ra tb_flags <<<"$TESTBED_FLAGS ${TESTBED_XDP_FLAGS:-}"
fi

# run NAME FLAGS...: one netbench run into DIR/NAME.json and NAME.txt, on
# the testbed when there is one.
run() {
	local name=$1
	shift
	run_on "${tb_flags[@]}" -- "$name" "$@"
}

# run_on [TESTBED FLAGS...] -- NAME FLAGS...: one run with the given
# testbed flags (none: loopback).
run_on() {
	local on=()
	while [[ $1 != -- ]]; do
		on+=("$1")
		shift
	done
	shift
	local name=$1
	shift
	echo "== $name" >&2
	echo "$name: $(uptime)" >>"$out/uptime.log"
	"$out/netbench" -quiet -shards 0 -label "$name" -json "$out/$name.json" "${on[@]}" "$@" | tee "$out/$name.txt"
}

if [[ $suite == game || $suite == all ]]; then
	for round in $(seq 1 "$rounds"); do
		for bare in false true; do
			tag=netcode
			[[ $bare == true ]] && tag=bare
			run "game-sweep-$tag-r$round" -mode game -sweep -clients 256 -bare=$bare "$@"
		done
		for clients in 1 256 4096; do
			tick=60
			[[ $clients == 4096 ]] && tick=$tick_4096
			for bare in false true; do
				tag=netcode
				[[ $bare == true ]] && tag=bare
				run "game-${clients}c-$tag-r$round" -mode game -clients "$clients" -tick "$tick" -duration "$duration" -bare=$bare "$@"
				run "echo-${clients}c-$tag-r$round" -clients "$clients" -rate "$echo_rate" -duration "$duration" -bare=$bare "$@"
			done
		done
	done
	go run ./scripts/baretable "$out"/game-*.json "$out"/echo-*.json >"$out/table.md"
	cat "$out/table.md"
fi

if [[ $suite == recv || $suite == all ]]; then
	for recv in mmsg block xnet single; do
		for size in 64 1200; do
			for clients in 256 4096; do
				run "recv-$recv-${size}B-${clients}c" -sweep -recv "$recv" -size "$size" -clients "$clients" "$@"
			done
		done
	done
	go run ./scripts/ratiotable "$out"/recv-*.json >"$out/recv-table.md"
	cat "$out/recv-table.md"
fi

if [[ $suite == net ]]; then
	if [[ -z ${TESTBED_FLAGS:-} ]]; then
		echo "compare.sh: SUITE=net needs TESTBED=1" >&2
		exit 2
	fi
	echo_size=${ECHO_SIZE:-64}
	for round in $(seq 1 "$rounds"); do
		for where in loopback testbed; do
			on=()
			[[ $where == testbed ]] && on=("${tb_flags[@]}")
			for bare in false true; do
				tag=netcode
				[[ $bare == true ]] && tag=bare
				run_on "${on[@]}" -- "net-game-sweep-$where-$tag-r$round" -mode game -sweep -clients 256 -bare=$bare "$@"
				run_on "${on[@]}" -- "net-echo-sweep-$where-$tag-r$round" -sweep -size "$echo_size" -clients 256 -bare=$bare "$@"
			done
		done
	done
	ls "$out"/net-*.json >&2
fi

if [[ $suite == xdp ]]; then
	if [[ -z ${TESTBED_FLAGS:-} ]]; then
		echo "compare.sh: SUITE=xdp runs on the testbed; set TESTBED=1" >&2
		exit 2
	fi
	echo_size=${ECHO_SIZE:-64}
	for round in $(seq 1 "$rounds"); do
		for path in sockets xdp bare; do
			flags=()
			case $path in
			xdp) flags=(-xdp "${XDP_MODE:-native}") ;;
			bare) flags=(-bare) ;;
			esac
			run "xdp-game-sweep-$path-r$round" -mode game -sweep -clients 256 "${flags[@]}" "$@"
			run "xdp-echo-sweep-$path-r$round" -sweep -size "$echo_size" -clients 256 -sample "${ECHO_SAMPLE:-8}" "${flags[@]}" "$@"
		done
	done
	ls "$out"/xdp-*.json >&2
fi

"$out/netbench" -plot "$out/latency.svg" "$out"/*.json
echo "results in $out" >&2

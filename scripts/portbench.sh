#!/usr/bin/env bash
# Benchmarks package reliable against the official Go port
# (github.com/mas-bandwidth/reliable.go) in one test binary: one packet of
# 100 B and of 4,000 B sent and received per op, directions alternating,
# Updates every 16 packets. The port is not served by the module proxy, so
# give a checkout of it:
#
#   scripts/portbench.sh PATH_TO_RELIABLE.GO [COUNT]
#
# It builds a throwaway module in a temporary directory (nothing of the
# port is kept in this repository) and prints ns/packet and allocations;
# the op alternates ours and the port's within each count.
set -euo pipefail
port="$(cd "${1:?usage: $0 PATH_TO_RELIABLE.GO [COUNT]}" && pwd)"
count="${2:-6}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/go.mod" <<MOD
module portbench

go 1.26.0

require (
	github.com/mas-bandwidth/reliable.go v0.0.0
	github.com/netcode-go/netcode v0.0.0
)

replace github.com/mas-bandwidth/reliable.go => $port

replace github.com/netcode-go/netcode => $repo
MOD
cp "$repo/scripts/portbench/cmp_test.go.txt" "$tmp/cmp_test.go"
cd "$tmp"
GOFLAGS=-mod=mod go test -run '^$' -bench . -count "$count" -benchtime 200000x

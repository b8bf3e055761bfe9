#!/usr/bin/env bash
# fleet.sh runs a fleet on loopback: three netcode-server processes, a
# netcode-token service choosing among them by health, and 300 clients
# that get tokens over HTTP and play. One server is killed and another
# drained mid-run; it prints a timeline and a summary and exits 1 if any
# client never came back.
#
#   scripts/fleet.sh [flags]        # see: go run ./scripts/fleet -h
#   scripts/fleet.sh -clients 1000 -kill-at 20s -drain-at 40s
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
cd "$root"
go build -o "$bin/" ./cmd/netcode-server ./cmd/netcode-token ./scripts/fleet
"$bin/fleet" -server-bin "$bin/netcode-server" -token-bin "$bin/netcode-token" "$@"

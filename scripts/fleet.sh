#!/usr/bin/env bash
# fleet.sh runs a netcode fleet on loopback for about half a minute: three
# netcode-server processes (each with /readyz and /metrics), one
# netcode-token serve token service choosing among them by health
# (-health-servers) with a bearer secret per player, and 300 engine.Clients
# that each POST for a connect token, connect and play at 10 Hz. Once all
# play, the busiest server is killed (SIGKILL) and, when its players are
# back elsewhere, the next busiest drained (SIGTERM). Every player must come
# back on the survivor with a fresh token. It prints a timeline and a
# summary (failovers, time from a server's death or drain to its players'
# return, how they spread over the survivors, tokens issued and refused) and exits non-zero if any check failed
# (scripts/fleet/main.go lists them).
#
#   scripts/fleet.sh [flags]                  such as -clients 500 -timeout 5 -drain-grace 5s
#   FLEET_CLIENTS=500 scripts/fleet.sh        every flag also as FLEET_<NAME>
#   scripts/fleet.sh -h                       the flags
#
# It builds what it runs into a temporary directory, picks free ports and
# stops every process it started on exit; the servers' and the token
# service's logs are kept (and their directory printed) when the run fails.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(mktemp -d "${TMPDIR:-/tmp}/netcode-fleet-bin.XXXXXX")
pid=

cleanup() {
	if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
		# The driver stops its children on SIGTERM; the process group
		# catches any it could not.
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 75); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL -- "-$pid" 2>/dev/null || true
	fi
	rm -rf "$bin"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cd "$root"
echo "fleet.sh: building netcode-server, netcode-token and scripts/fleet" >&2
go build -o "$bin/" ./cmd/netcode-server ./cmd/netcode-token ./scripts/fleet

# A process group of its own (set -m), so that cleanup can end the driver
# and every server it started at once.
set -m
"$bin/fleet" -bin "$bin" "$@" &
pid=$!
set +m
status=0
wait "$pid" || status=$?
pid=
exit "$status"

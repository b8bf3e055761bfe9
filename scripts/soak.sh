#!/usr/bin/env bash
# Runs the engine's soak test (engine/soak_test.go) for longer than CI does:
# players join, play and leave continuously over a simulated network with
# 10% loss and 50 ms jitter, and the server's tables, goroutines and heap
# must stay flat.
#
#   scripts/soak.sh [-race] [DURATION]    DURATION like 90s, 30m, 2h or 1h30m; default 10m
#
# The output is also written to $SOAK_LOG (default a file in $TMPDIR).
set -euo pipefail
cd "$(dirname "$0")/.."

race=()
duration=10m
for arg in "$@"; do
  case "$arg" in
    -race) race=(-race) ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    -*) echo "soak.sh: unknown flag $arg (want -race)" >&2; exit 2 ;;
    *) duration="$arg" ;;
  esac
done

# go test's -timeout is the duration plus room for the build, the last
# drain and the report (the test shortens itself if the timeout is tighter).
if [[ ! "$duration" =~ ^([0-9]+h)?([0-9]+m)?([0-9]+s)?$ || -z "$duration" ]]; then
  echo "soak.sh: duration \"$duration\": want whole hours, minutes and seconds such as 90s, 30m, 2h or 1h30m" >&2
  exit 2
fi
seconds=0
rest="$duration"
while [[ "$rest" =~ ^([0-9]+)([hms])(.*)$ ]]; do
  n="${BASH_REMATCH[1]}"
  case "${BASH_REMATCH[2]}" in
    h) seconds=$((seconds + 3600 * 10#$n)) ;;
    m) seconds=$((seconds + 60 * 10#$n)) ;;
    s) seconds=$((seconds + 10#$n)) ;;
  esac
  rest="${BASH_REMATCH[3]}"
done
if ((seconds == 0)); then
  echo "soak.sh: duration \"$duration\" is zero" >&2
  exit 2
fi
timeout="$((seconds + 300))s"
log="${SOAK_LOG:-${TMPDIR:-/tmp}/netcode-soak-$(date +%Y%m%d-%H%M%S).log}"
echo "soak: $duration${race:+ with -race}, go test -timeout $timeout, log in $log"
NETCODE_SOAK_DURATION="$duration" go test "${race[@]}" -count=1 -timeout "$timeout" -run '^TestSoak$' -v ./engine 2>&1 | tee "$log"

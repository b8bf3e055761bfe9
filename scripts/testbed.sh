#!/usr/bin/env bash
# testbed.sh runs a command in a veth testbed: two network namespaces of
# this run's own, joined by a veth pair, so that a server in one and a
# load in the other no longer share loopback, where the sender pays for
# delivering every datagram into the receiver's socket.
#
#   scripts/testbed.sh [-t SECONDS] [-- ] COMMAND [ARGS...]
#   scripts/testbed.sh go run ./cmd/netbench -mode game -sweep   # netbench sees $TESTBED_FLAGS
#   scripts/testbed.sh -t 600 scripts/compare.sh results/tb       # or TESTBED=1 scripts/compare.sh
#
# COMMAND runs in the load's namespace with these in its environment:
#
#   TESTBED_SERVER_NS    the server's namespace (netbench -server-netns)
#   TESTBED_SERVER_IP    198.18.0.1, the server's address
#   TESTBED_CLIENT_NET   198.19.0.0/16, local to the load's namespace
#                        (a local route: every address in it is the
#                        load's, as 127.0.0.0/8 is on loopback)
#   TESTBED_FLAGS        the netbench flags that say all three; a netbench
#                        run without them still runs on loopback, inside
#                        the load's namespace
#   TESTBED_SERVER_CPUS, TESTBED_LOAD_CPUS  the cores each side is pinned to
#
# Addresses come only from the benchmarking range 198.18.0.0/15 (RFC
# 2544): 198.18.0.1/30 and 198.18.0.2/30 on the veth pair, 198.19.0.0/16
# for the load's clients. Neither namespace has a default route or any
# other interface than lo and its veth end: nothing leaves them.
#
# Each side's receive processing runs on its own core: what the server
# sends is delivered into the load's sockets (or AF_XDP rings) by the
# load's core, and the reverse, as with two machines' NICs. netbench pins
# the server to the last allowed CPU and the load to the others, and the
# receive steering follows the same split (TESTBED_SERVER_CPUS /
# TESTBED_LOAD_CPUS). TESTBED_STEER chooses how:
#
#   napi (default)  GRO on both veth ends gives each a NAPI instance, run
#                   as a kernel thread (threaded NAPI) pinned to its
#                   side's cores at SCHED_FIFO 50 (it preempts the
#                   side's process, as a softirq would): the model of a
#                   NIC whose interrupt is affine to the receiver's core.
#                   It is the only way that is fair to XDP: a veth end
#                   with an XDP program runs it in NAPI, and unthreaded
#                   NAPI runs on the *sender's* core, so an AF_XDP
#                   server's receive would be paid by the load. Interrupt
#                   coalescing: after a poll the thread polls again in
#                   TESTBED_COALESCE_US microseconds (default 50; 0: off)
#                   instead of waiting to be woken, and goes back to
#                   being woken after two empty polls, so the sender does
#                   not pay a cross-core wake-up per datagram (on this
#                   paravirtualised VM an interrupt enable is costly).
#                   TSO is off on both ends: with it on, veth delivers a
#                   socket's datagrams through the sender's backlog
#                   instead of the peer's NAPI, and the sender pays for
#                   the receiver's stack, as on loopback. Needs ethtool.
#   rps             receive packet steering on each end's queue, no NAPI:
#                   the socket path as before; an XDP program attached to
#                   an end then runs on the sender's core.
#
# Each veth end gets a pfifo qdisc of TESTBED_QLEN packets (default
# 16384): a NIC queues a burst it cannot send yet in its transmit ring
# and qdisc, but a veth end's default qdisc is noqueue, and with NAPI the
# peer's 256-frame ring drops the rest of a tick's burst. With a qdisc
# the kernel stops the queue while the ring is full and the sender waits
# (an AF_XDP socket's sends wait in its own ring).
#
# A NIC holds a burst in its receive ring; a veth pair with RPS holds it
# in the receiving core's backlog, net.core.netdev_max_backlog packets
# (1,000 by default), and drops the rest: a game tick's burst of inputs
# or snapshots for 1,000+ players overflows it at a quarter of a core.
# The testbed raises the limit to TESTBED_BACKLOG (default 16384) while it
# lives and puts the old value back when it goes, unless another run
# changed it meanwhile. The setting is the whole machine's, not a
# namespace's.
#
# The testbed lives at most -t SECONDS (default 1800): the command is
# killed after that. Both namespaces (and with them the veth pair) are
# removed when the command ends, on Ctrl-C or TERM, and, through a
# watchdog process, when this script itself is killed with SIGKILL. Names
# are unique per run (nbtb<pid>s / nbtb<pid>l): concurrent runs do not
# collide, and a run that finds namespaces of a dead run removes them.
#
# XDP: a later AF_XDP path needs the server's interface; it is
# $TESTBED_SERVER_IF inside $TESTBED_SERVER_NS, and TESTBED_XDP_FLAGS
# (empty by default) is passed to netbench after TESTBED_FLAGS by
# compare.sh, the hook for -xdp.
set -euo pipefail

timeout_s=1800
if [[ ${1:-} == -t ]]; then
	timeout_s=$2
	shift 2
fi
[[ ${1:-} == -- ]] && shift
if [[ $# -eq 0 ]]; then
	echo "usage: $0 [-t SECONDS] [--] COMMAND [ARGS...]" >&2
	exit 2
fi
if ! [[ $timeout_s =~ ^[0-9]+$ ]] || ((timeout_s < 1 || timeout_s > 86400)); then
	echo "testbed: -t $timeout_s: want whole seconds from 1 to 86400" >&2
	exit 2
fi
if [[ $(id -u) != 0 ]]; then
	echo "testbed: needs root (ip netns add)" >&2
	exit 2
fi

steer=${TESTBED_STEER:-napi}
case $steer in
napi)
	if ! command -v ethtool >/dev/null; then
		echo "testbed: TESTBED_STEER=napi needs ethtool (apt-get install ethtool), or use TESTBED_STEER=rps" >&2
		exit 2
	fi
	;;
rps) ;;
*)
	echo "testbed: TESTBED_STEER=$steer: want napi or rps" >&2
	exit 2
	;;
esac

coalesce=${TESTBED_COALESCE_US:-50}
if ! [[ $coalesce =~ ^[0-9]+$ ]] || ((coalesce > 10000)); then
	echo "testbed: TESTBED_COALESCE_US=$coalesce: want 0 (off) to 10000 microseconds" >&2
	exit 2
fi
qlen=${TESTBED_QLEN:-16384}
if ! [[ $qlen =~ ^[0-9]+$ ]] || ((qlen < 1 || qlen > 1048576)); then
	echo "testbed: TESTBED_QLEN=$qlen: want 1 to 1048576 packets" >&2
	exit 2
fi

id=$$
backlog=${TESTBED_BACKLOG:-16384}
if ! [[ $backlog =~ ^[0-9]+$ ]] || ((backlog < 1000 || backlog > 1048576)); then
	echo "testbed: TESTBED_BACKLOG=$backlog: want 1000 to 1048576 packets" >&2
	exit 2
fi
old_backlog=$(sysctl -n net.core.netdev_max_backlog)
srv_ns=nbtb${id}s
load_ns=nbtb${id}l
srv_if=nbtb${id}s
load_if=nbtb${id}l
srv_ip=198.18.0.1
load_ip=198.18.0.2
client_net=198.19.0.0/16

# Remove namespaces left by runs whose script is gone (killed before its
# watchdog could act, or a crashed machine).
for ns in $(ip netns list | awk '{print $1}' | grep -E '^nbtb[0-9]+[sl]$' || true); do
	pid=${ns#nbtb}
	pid=${pid%[sl]}
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "testbed: removing $ns of a run that is gone (pid $pid)" >&2
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
		ip netns del "$ns" 2>/dev/null || true
	fi
done

# cleanup kills what still runs in this run's namespaces and removes them
# (the veth pair goes with them), and puts the backlog limit back. Safe to
# run twice.
cleanup() {
	local ns p
	if ((old_backlog < backlog)) && [[ $(sysctl -n net.core.netdev_max_backlog) == "$backlog" ]]; then
		sysctl -qw net.core.netdev_max_backlog="$old_backlog" || true
	fi
	for ns in "$load_ns" "$srv_ns"; do
		if ip netns list | awk '{print $1}' | grep -qx "$ns"; then
			for p in $(ip netns pids "$ns" 2>/dev/null); do kill -TERM "$p" 2>/dev/null || true; done
		fi
	done
	sleep 0.2
	for ns in "$load_ns" "$srv_ns"; do
		if ip netns list | awk '{print $1}' | grep -qx "$ns"; then
			for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
			ip netns del "$ns" 2>/dev/null || true
		fi
	done
}
child=
# stop ends the command (by its pid) and exits; cleanup runs on EXIT.
stop() {
	[[ -n $child ]] && kill -TERM "$child" 2>/dev/null
	exit "$1"
}
trap 'cleanup' EXIT
trap 'stop 130' INT
trap 'stop 143' TERM
trap 'stop 129' HUP

# The watchdog outlives a SIGKILL of this script: it waits for the
# script's pid to go, then cleans up. It is bounded by the same time limit
# (plus a minute).
(
	trap '' INT TERM HUP
	end=$((SECONDS + timeout_s + 60))
	while kill -0 "$id" 2>/dev/null && ((SECONDS < end)); do sleep 1; done
	cleanup
) </dev/null >/dev/null 2>&1 &
disown $! 2>/dev/null || true

ip netns add "$srv_ns"
ip netns add "$load_ns"
if ((old_backlog < backlog)); then
	sysctl -qw net.core.netdev_max_backlog="$backlog"
fi
ip link add "$srv_if" netns "$srv_ns" type veth peer name "$load_if" netns "$load_ns"

# The cores: netbench pins the server to the last allowed CPU, the load to
# the rest.
all=()
for part in $(taskset -pc $$ | sed 's/.*: //' | tr ',' ' '); do
	a=${part%-*}
	b=${part#*-}
	for ((c = a; c <= b; c++)); do all+=("$c"); done
done
n=${#all[@]}
default_server=${all[n - 1]}
default_load=$default_server
if ((n > 1)); then
	default_load=$(
		IFS=,
		echo "${all[*]:0:n-1}"
	)
fi
server_cpus=${TESTBED_SERVER_CPUS:-$default_server}
load_cpus=${TESTBED_LOAD_CPUS:-$default_load}
mask() { # CPU list "0,2" -> hex mask
	local m=0 c
	for c in ${1//,/ }; do m=$((m | 1 << c)); done
	printf '%x' "$m"
}

# pin_napi pins the NAPI threads of interface IF (named napi/IF-ID) to
# CPUS; it fails when there are none.
pin_napi() { # IF CPUS
	local p name found=
	for p in $(pgrep '^napi/' || true); do
		name=$(cat "/proc/$p/comm" 2>/dev/null) || continue # the full name, not ps's 15 bytes
		[[ $name =~ ^napi/$1-[0-9]+$ ]] || continue
		taskset -pc "$2" "$p" >/dev/null
		chrt -f -p 50 "$p"
		found=1
	done
	[[ -n $found ]]
}

setup_side() { # NS IF ADDR CPUS
	ip -n "$1" link set lo up
	ip -n "$1" addr add "$3/30" dev "$2"
	ip -n "$1" link set "$2" up
	ip netns exec "$1" tc qdisc replace dev "$2" root pfifo limit "$qlen"
	case $steer in
	napi)
		# tso off: veth hands a frame to the peer's NAPI only if the
		# peer has an XDP program or the sending end cannot segment TCP
		# (veth_skb_is_eligible_for_gro); otherwise it queues it on the
		# sending core's backlog, and the sender pays for the receive.
		ip netns exec "$1" ethtool -K "$2" gro on tso off
		ip netns exec "$1" sh -c "echo 1 > /sys/class/net/$2/threaded"
		if ((coalesce > 0)); then
			ip netns exec "$1" sh -c "echo 2 > /sys/class/net/$2/napi_defer_hard_irqs; echo $((coalesce * 1000)) > /sys/class/net/$2/gro_flush_timeout"
		fi
		if ! pin_napi "$2" "$4"; then
			echo "testbed: no NAPI thread for $2 after enabling GRO and threaded NAPI" >&2
			exit 1
		fi
		;;
	rps)
		ip netns exec "$1" sh -c "echo $(mask "$4") > /sys/class/net/$2/queues/rx-0/rps_cpus"
		;;
	esac
}
setup_side "$srv_ns" "$srv_if" "$srv_ip" "$server_cpus"
setup_side "$load_ns" "$load_if" "$load_ip" "$load_cpus"
# Every address in the client block is the load's (shared client sockets
# bind the wildcard address and send from any of them); the server reaches
# the block through the veth pair. No default route on either side.
ip -n "$load_ns" route add local "$client_net" dev lo
ip -n "$srv_ns" route add "$client_net" via "$load_ip" dev "$srv_if"
# Replies to a client block address leave by the veth; relax the reverse
# path check for the block's sources, which arrive on the veth.
ip netns exec "$srv_ns" sysctl -qw net.ipv4.conf.all.rp_filter=0 "net.ipv4.conf.$srv_if.rp_filter=0"

if ! ip -n "$load_ns" route get "$srv_ip" >/dev/null 2>&1 || ! ip -n "$srv_ns" route get 198.19.0.1 >/dev/null 2>&1; then
	echo "testbed: no route between $srv_ip and $client_net" >&2
	exit 1
fi

export TESTBED_SERVER_NS=$srv_ns TESTBED_SERVER_IP=$srv_ip TESTBED_CLIENT_NET=$client_net
export TESTBED_SERVER_IF=$srv_if TESTBED_LOAD_IF=$load_if TESTBED_STEER=$steer TESTBED_SERVER_CPUS=$server_cpus TESTBED_LOAD_CPUS=$load_cpus
export TESTBED_FLAGS="-server-netns $srv_ns -server-ip $srv_ip -client-net $client_net"
export TESTBED_XDP_FLAGS=${TESTBED_XDP_FLAGS:-}
echo "testbed: $srv_ns ($srv_ip, cpus $server_cpus) <-> $load_ns ($load_ip, $client_net, cpus $load_cpus), steering $steer, at most ${timeout_s}s" >&2

# Not exec, and in the background: bash runs a trap only between
# commands, and wait is one it interrupts.
set +e
timeout --kill-after=5 "$timeout_s" ip netns exec "$load_ns" "$@" &
child=$!
wait "$child"
rc=$?
child=
set -e
exit $rc

//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/netcode-go/netcode/batchio"
)

// connCounters is what conns counted on the AF_XDP path since they were
// opened, added up, by name, with the drops of their interface ifname (a
// veth counts as rx_dropped the frames its program could not hand to a
// socket, the socket's drops again): where a datagram on the AF_XDP path
// can be lost before it is read or after it was written. Nil when none
// of conns is on the AF_XDP path (sockets, or a fallback to them).
func connCounters(conns []batchio.Conn, ifname string) map[string]uint64 {
	m := map[string]uint64{}
	xdp := false
	for _, c := range conns {
		x, ok := batchio.As[batchio.XDPStatsReader](c)
		if !ok {
			continue
		}
		xdp = true
		st := x.XDPStats()
		m["rx_dropped"] += st.RxDropped
		m["rx_ring_full"] += st.RxRingFull
		m["rx_fill_empty"] += st.RxFillEmpty
		m["tx_invalid"] += st.TxInvalid
		m["no_frame"] += st.NoFrame
		m["tx_left"] += st.TxLeft
		m["kernel_rx"] += st.KernelRx
		m["kernel_tx"] += st.KernelTx
		m["malformed"] += st.Malformed
	}
	if !xdp {
		return nil
	}
	for _, k := range []string{"rx_dropped", "tx_dropped"} {
		if v, ok := linkCounter(ifname, k); ok {
			m["link_"+k] = v
		}
	}
	return m
}

// loadCounters is connCounters of the load's AF_XDP conns (nil without
// -load-xdp).
func (r *runner) loadCounters() map[string]uint64 {
	return connCounters(r.load.SharedConns(), r.loadXDPIf)
}

// linkCounter reads one of an interface's statistics from sysfs (in the
// process's network namespace).
func linkCounter(ifname, name string) (uint64, bool) {
	if ifname == "" || strings.ContainsAny(ifname, "/.") {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join("/sys/class/net", ifname, "statistics", name))
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}

// linksTxDropped is the tx_dropped of every interface but loopback in
// the process's network namespace, added up: on the testbed, the load's
// end of the veth pair, which counts what the server's end had no room
// for in native mode (its ring of 256 frames).
func linksTxDropped() (uint64, bool) {
	ents, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return 0, false
	}
	var sum uint64
	for _, e := range ents {
		if e.Name() == "lo" {
			continue
		}
		if v, ok := linkCounter(e.Name(), "tx_dropped"); ok {
			sum += v
		}
	}
	return sum, true
}

// counterDelta is end minus begin, name by name (nil if end is).
func counterDelta(begin, end map[string]uint64) map[string]uint64 {
	if end == nil {
		return nil
	}
	d := make(map[string]uint64, len(end))
	for k, v := range end {
		d[k] = v - min(begin[k], v)
	}
	return d
}

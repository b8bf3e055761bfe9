package dedicated

import (
	"net/netip"
	"slices"
)

// uniqueAddrs drops repeats in order: every shard of a bind address
// reports the same address, which a log line names once.
func uniqueAddrs(addrs []netip.AddrPort) []netip.AddrPort {
	var out []netip.AddrPort
	for _, a := range addrs {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

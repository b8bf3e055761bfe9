//go:build !linux

package batchio

import "net/netip"

// Outside Linux the portable socket does not share addresses, so the
// system's own bind check is the only one.
func probeFree(netip.AddrPort) error { return nil }

func checkAlone([]Conn) error { return nil }

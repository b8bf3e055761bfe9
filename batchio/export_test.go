package batchio

import "net/netip"

// ListenPortable opens the portable socket (the one Listen opens outside
// Linux) on any system, for the external benchmarks.
func ListenPortable(addr netip.AddrPort) (Conn, error) {
	return listenUDP(addr, Config{}, udpLimits{})
}

// PortableInboxFull returns how many arrivals a portable socket dropped
// because its inbox was full.
func PortableInboxFull(c Conn) uint64 { return c.(*udpConn).stats.inboxFull.Load() }

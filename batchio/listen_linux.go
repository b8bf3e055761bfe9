//go:build linux

package batchio

import "net/netip"

// Listen opens the fastest socket this system has: on Linux a batch
// socket using recvmmsg/sendmmsg (see MmsgConn).
func Listen(addr netip.AddrPort, cfg MmsgConfig) (Conn, error) {
	return ListenMmsg(addr, cfg)
}

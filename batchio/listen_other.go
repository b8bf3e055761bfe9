//go:build !linux

package batchio

import (
	"errors"
	"net/netip"
)

// Listen opens a UDP socket on addr: IPv4 for an IPv4 (or IPv4-mapped)
// address, IPv6-only for an IPv6 one, so serve both families with two
// sockets. Outside Linux it is the portable socket, one system call per
// datagram, which is a Waker and a StatsReader; of cfg only the buffer
// sizes apply (BlockingWait is ignored, PacketInfo is an error).
func Listen(addr netip.AddrPort, cfg Config) (Conn, error) {
	if cfg.PacketInfo {
		return nil, errors.New("batchio: PacketInfo needs Linux")
	}
	c, err := listenUDP(addr, cfg, udpLimits{})
	if err != nil {
		return nil, err
	}
	return c, nil
}

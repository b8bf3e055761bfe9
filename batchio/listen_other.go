//go:build !linux

package batchio

import (
	"errors"
	"fmt"
	"net/netip"
)

// Listen opens a UDP socket on addr: IPv4 for an IPv4 (or IPv4-mapped)
// address, IPv6-only for an IPv6 one, so serve both families with two
// sockets. Outside Linux it is the portable socket, one system call per
// datagram, which is a Waker and a StatsReader; of cfg only the buffer
// sizes apply (BlockingWait is ignored, PacketInfo is an error, and so is
// SourceLimit unless Optional).
func Listen(addr netip.AddrPort, cfg Config) (Conn, error) {
	if cfg.XDP.Mode != XDPOff {
		conns, err := listenXDP(addr, 1, cfg)
		if err != nil {
			return nil, err
		}
		return conns[0], nil
	}
	if cfg.PacketInfo {
		return nil, errors.New("batchio: PacketInfo needs Linux")
	}
	if cfg.SourceLimit.Rate > 0 && !cfg.SourceLimit.Optional {
		return nil, errNoLimit
	}
	c, err := listenUDP(addr, cfg, udpLimits{})
	if err != nil {
		return nil, err
	}
	if cfg.SourceLimit.Rate > 0 {
		c.limitErr = errNoLimit
	}
	return c, nil
}

var errNoLimit = errors.New("batchio: source limit: eBPF socket filters need Linux; set SourceLimit.Optional to run without it")

// listenXDP: AF_XDP needs Linux. XDPTry falls back to the socket path.
func listenXDP(addr netip.AddrPort, n int, cfg Config) ([]Conn, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.XDP.Mode != XDPTry {
		return nil, fmt.Errorf("batchio: XDP mode %v: %w: needs Linux", cfg.XDP.Mode, ErrXDPUnsupported)
	}
	cfg.XDP = XDP{}
	return ListenGroup(addr, n, cfg)
}

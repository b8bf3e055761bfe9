//go:build linux

package batchio

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// setReusePort lets several sockets bind one address; the kernel then
// spreads flows over them by a hash of the 4-tuple.
func setReusePort(fd int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
}

// setBuffer asks for a socket buffer of want bytes, first with the FORCE
// variant (which ignores rmem_max/wmem_max but needs CAP_NET_ADMIN), then
// the plain one, and returns what the kernel actually gave. Linux reports
// twice the requested size (it counts bookkeeping), so got is halved to be
// comparable with want.
func setBuffer(fd, force, plain, want int) (got int, err error) {
	if want <= 0 {
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, plain)
		return v / 2, err
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, want) != nil {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, want); err != nil {
			return 0, fmt.Errorf("batchio: set socket buffer to %d: %w", want, err)
		}
	}
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, plain)
	return v / 2, err
}

// setTOS marks outgoing packets with a DSCP/TOS byte (for example 0xb8,
// DSCP EF, for latency-sensitive game traffic).
func setTOS(fd int, ipv6 bool, tos int) error {
	if ipv6 {
		return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tos)
	}
	return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, tos)
}

// openSocket makes a non-blocking UDP socket with the configured options
// and binds it. It returns the descriptor, the bound address and the buffer
// sizes the kernel granted.
func openSocket(addr netip.AddrPort, ipv6 bool, cfg *Config) (int, netip.AddrPort, [2]int, error) {
	var bufs [2]int
	family := unix.AF_INET
	if ipv6 {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return -1, netip.AddrPort{}, bufs, fmt.Errorf("batchio: socket: %w", err)
	}
	fail := func(what string, err error) (int, netip.AddrPort, [2]int, error) {
		unix.Close(fd)
		return -1, netip.AddrPort{}, bufs, fmt.Errorf("batchio: %s on %v: %w", what, addr, err)
	}
	if cfg.ReusePort {
		if err := setReusePort(fd); err != nil {
			return fail("SO_REUSEPORT", err)
		}
	}
	if ipv6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			return fail("IPV6_V6ONLY", err)
		}
	}
	if bufs[0], err = setBuffer(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, cfg.RecvBuffer); err != nil {
		return fail("receive buffer", err)
	}
	if bufs[1], err = setBuffer(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, cfg.SendBuffer); err != nil {
		return fail("send buffer", err)
	}
	if cfg.TOS != 0 {
		if err := setTOS(fd, ipv6, cfg.TOS); err != nil {
			return fail("TOS", err)
		}
	}
	if cfg.PacketInfo {
		if err := enablePacketInfo(fd, ipv6); err != nil {
			return fail("packet info", err)
		}
	}
	var sa unix.Sockaddr
	if ipv6 {
		sa = &unix.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16()}
	} else {
		sa = &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	bound, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	var local netip.AddrPort
	switch b := bound.(type) {
	case *unix.SockaddrInet4:
		local = netip.AddrPortFrom(netip.AddrFrom4(b.Addr), uint16(b.Port))
	case *unix.SockaddrInet6:
		local = netip.AddrPortFrom(netip.AddrFrom16(b.Addr), uint16(b.Port))
	}
	return fd, local, bufs, nil
}

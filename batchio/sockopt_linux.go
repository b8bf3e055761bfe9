//go:build linux

package batchio

import (
	"fmt"

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

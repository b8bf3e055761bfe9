//go:build linux

package batchio

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// procNetUDP are the socket tables of the process's network namespace.
var procNetUDP = [2]string{"/proc/self/net/udp", "/proc/self/net/udp6"}

// probeFree binds a socket without SO_REUSEPORT to addr and closes it: the
// bind fails exactly when some socket on an overlapping address exists,
// whatever its options, so a running group is refused before it is joined.
func probeFree(addr netip.AddrPort) error {
	ipv6 := !addr.Addr().Unmap().Is4()
	if !ipv6 {
		addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	}
	family := unix.AF_INET
	if ipv6 {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return fmt.Errorf("batchio: probe socket for %v: %w", addr, err)
	}
	defer unix.Close(fd)
	var sa unix.Sockaddr
	if ipv6 {
		// IPv6-only as the group's sockets, so that the same server's
		// IPv4 group on this port is no conflict.
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			return fmt.Errorf("batchio: probe socket for %v: IPV6_V6ONLY: %w", addr, err)
		}
		sa = &unix.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16()}
	} else {
		sa = &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
	}
	err = unix.Bind(fd, sa)
	if errors.Is(err, unix.EADDRINUSE) {
		return fmt.Errorf("batchio: listen %v: %w (another server on this port? refusing to join its SO_REUSEPORT group)", addr, ErrAddrServed)
	}
	if err != nil {
		return fmt.Errorf("batchio: listen %v: %w", addr, err)
	}
	return nil
}

// checkAlone fails if the system's socket table shows a socket on an
// address overlapping the group's that is not one of the group's own,
// matched by socket inode. It runs after every socket of the group is
// bound: of two groups that bind concurrently, the later scan sees the
// other's sockets, so at most one passes.
func checkAlone(conns []Conn) error {
	local := conns[0].LocalAddr()
	own := make(map[uint64]bool, len(conns))
	for _, c := range conns {
		ino, err := socketInode(c)
		if err != nil {
			return fmt.Errorf("batchio: listen %v: %w", local, err)
		}
		own[ino] = true
	}
	ipv6 := !local.Addr().Is4()
	path := procNetUDP[0]
	if ipv6 {
		path = procNetUDP[1]
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("batchio: listen %v: cannot check for another server on the port: %w", local, err)
	}
	defer f.Close()
	socks, err := parseProcNet(f, ipv6)
	if err != nil {
		return fmt.Errorf("batchio: listen %v: %s: %w", local, path, err)
	}
	foreign := 0
	for _, s := range socks {
		if overlaps(s.local, local) && !own[s.inode] {
			foreign++
		}
	}
	if foreign > 0 {
		return fmt.Errorf("batchio: listen %v: %w (%d sockets not ours on the port; another server? refusing to share its SO_REUSEPORT group)", local, ErrAddrServed, foreign)
	}
	return nil
}

// socketInode is the inode number of a conn's socket, as the socket
// tables list it.
func socketInode(c Conn) (uint64, error) {
	mc, ok := c.(*mmsgConn)
	if !ok {
		return 0, fmt.Errorf("batchio: %T is not a socket", c)
	}
	var st unix.Stat_t
	var serr error
	if err := mc.rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, fmt.Errorf("fstat: %w", serr)
	}
	return st.Ino, nil
}

// overlaps reports whether datagrams to one address could be delivered to
// a socket bound to the other: the same port, and the same address or
// either one the wildcard.
func overlaps(a, b netip.AddrPort) bool {
	if a.Port() != b.Port() {
		return false
	}
	return a.Addr() == b.Addr() || a.Addr().IsUnspecified() || b.Addr().IsUnspecified()
}

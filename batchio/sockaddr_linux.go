//go:build linux

package batchio

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// decodeSockaddr turns a kernel socket address into a netip.AddrPort
// without allocating.
func decodeSockaddr(sa *unix.RawSockaddrInet6) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		p := (*[2]byte)(unsafe.Pointer(&sa4.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), uint16(p[0])<<8|uint16(p[1]))
	case unix.AF_INET6:
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
	}
	return netip.AddrPort{}
}

// encodeSockaddr writes addr for a socket of the given family and returns
// the address length, or 0 if addr cannot be sent from that socket.
func encodeSockaddr(sa *unix.RawSockaddrInet6, addr netip.AddrPort, ipv6 bool) uint32 {
	ip := addr.Addr()
	port := addr.Port()
	if !ipv6 {
		ip = ip.Unmap()
		if !ip.Is4() {
			return 0
		}
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		sa4.Family = unix.AF_INET
		p := (*[2]byte)(unsafe.Pointer(&sa4.Port))
		p[0], p[1] = byte(port>>8), byte(port)
		sa4.Addr = ip.As4()
		return unix.SizeofSockaddrInet4
	}
	if !ip.Is6() || ip.Is4In6() {
		return 0
	}
	sa.Family = unix.AF_INET6
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	p[0], p[1] = byte(port>>8), byte(port)
	sa.Flowinfo = 0
	sa.Addr = ip.As16()
	sa.Scope_id = 0
	return unix.SizeofSockaddrInet6
}

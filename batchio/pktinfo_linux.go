//go:build linux

package batchio

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pktinfoSpace is the control buffer reserved per message for one
// IP_PKTINFO or IPV6_PKTINFO message (the IPv6 one, 40 bytes, is the
// larger), rounded up with room for a stray second message the kernel
// might add.
const pktinfoSpace = 64

// sendCtlSpace is the control buffer reserved per outgoing header: a
// source address (IPV6_PKTINFO is the larger) then a GSO segment size
// (UDP_SEGMENT), each padded as the kernel walks them.
var sendCtlSpace = unix.CmsgSpace(unix.SizeofInet6Pktinfo) + unix.CmsgSpace(segmentSizeLen)

// enablePacketInfo asks the kernel to report each datagram's destination
// address.
func enablePacketInfo(fd int, ipv6 bool) error {
	if ipv6 {
		return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1)
	}
	return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
}

// parsePacketInfo returns the destination address in a received control
// buffer, or the zero Addr. It walks the messages by hand because
// unix.ParseSocketControlMessage allocates.
func parsePacketInfo(ctl []byte) netip.Addr {
	for len(ctl) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(ctl) {
			return netip.Addr{}
		}
		data := ctl[unix.CmsgLen(0):l]
		switch {
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
			info := (*unix.Inet4Pktinfo)(unsafe.Pointer(&data[0]))
			return netip.AddrFrom4(info.Addr)
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
			info := (*unix.Inet6Pktinfo)(unsafe.Pointer(&data[0]))
			return netip.AddrFrom16(info.Addr)
		}
		next := unix.CmsgSpace(l - unix.CmsgLen(0))
		if next > len(ctl) {
			break
		}
		ctl = ctl[next:]
	}
	return netip.Addr{}
}

// writePacketInfo writes a control message that sends from src into ctl
// and returns its length, or 0 when src does not suit the socket's family
// (the kernel then picks the source).
func writePacketInfo(ctl []byte, src netip.Addr, ipv6 bool) int {
	if ipv6 {
		if !src.Is6() || src.Is4In6() {
			return 0
		}
		n := unix.CmsgSpace(unix.SizeofInet6Pktinfo)
		clear(ctl[:n])
		h := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		h.Level, h.Type = unix.IPPROTO_IPV6, unix.IPV6_PKTINFO
		h.SetLen(unix.CmsgLen(unix.SizeofInet6Pktinfo))
		info := (*unix.Inet6Pktinfo)(unsafe.Pointer(&ctl[unix.CmsgLen(0)]))
		info.Addr = src.As16()
		return n
	}
	src = src.Unmap()
	if !src.Is4() {
		return 0
	}
	n := unix.CmsgSpace(unix.SizeofInet4Pktinfo)
	clear(ctl[:n])
	h := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
	h.Level, h.Type = unix.IPPROTO_IP, unix.IP_PKTINFO
	h.SetLen(unix.CmsgLen(unix.SizeofInet4Pktinfo))
	info := (*unix.Inet4Pktinfo)(unsafe.Pointer(&ctl[unix.CmsgLen(0)]))
	info.Spec_dst = src.As4()
	return n
}

//go:build linux

package batchio

import (
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// maxGSOSegments is the most datagrams one GSO send carries: the
	// kernel's UDP_MAX_SEGMENTS, 64 since GSO came in (4.18).
	maxGSOSegments = 64
	// maxGSOBytes bounds a GSO send's payload, safely below the 65,507
	// bytes an IPv4 UDP packet can hold before it is segmented.
	maxGSOBytes = 65000
	// segmentSizeLen is the size of UDP_SEGMENT's value, a uint16.
	segmentSizeLen = 2
)

// probeGSO reports whether the kernel knows UDP_SEGMENT. The option must
// be checked before the first send: a kernel older than 4.18 ignores the
// control message and would send the whole run as one datagram.
func probeGSO(fd int) bool {
	_, err := unix.GetsockoptInt(fd, unix.SOL_UDP, unix.UDP_SEGMENT)
	return err == nil
}

// gsoRun returns how many messages from the front of msgs, whose first is
// sendable, can go as one GSO send: consecutive, to the same address from
// the same source, all as long as the first except a shorter last one,
// and within the kernel's limits. Local only matters with PacketInfo,
// since otherwise it is not sent.
func (c *mmsgConn) gsoRun(msgs []Message) int {
	first := &msgs[0]
	size, total := first.N, first.N
	k := 1
	for k < len(msgs) && k < maxGSOSegments {
		m := &msgs[k]
		if m.Addr != first.Addr || (c.pktinfo && m.Local != first.Local) ||
			m.N <= 0 || m.N > size || m.N > len(m.Buf) || total+m.N > maxGSOBytes {
			break
		}
		total += m.N
		k++
		if m.N < size {
			break // a shorter segment can only be the last
		}
	}
	return k
}

// writeSegmentSize writes a UDP_SEGMENT control message into ctl and
// returns its length.
func writeSegmentSize(ctl []byte, size int) int {
	n := unix.CmsgSpace(segmentSizeLen)
	clear(ctl[:n])
	h := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(segmentSizeLen))
	*(*uint16)(unsafe.Pointer(&ctl[unix.CmsgLen(0)])) = uint16(size)
	return n
}

// setControl writes header i's control messages: the source address
// (PacketInfo, unless src is the zero Addr or of the other family) and,
// for a GSO send, the segment size (0: a plain datagram).
func (c *mmsgConn) setControl(i int, src netip.Addr, segmentSize int) {
	h := &c.whdrs[i].Hdr
	ctl := c.wctl[i*sendCtlSpace : (i+1)*sendCtlSpace]
	n := 0
	if c.pktinfo && src.IsValid() {
		n = writePacketInfo(ctl, src, c.ipv6)
	}
	if segmentSize > 0 {
		n += writeSegmentSize(ctl[n:], segmentSize)
	}
	h.Control = nil
	if n > 0 {
		h.Control = &ctl[0]
	}
	h.SetControllen(n)
}

// gsoPathError reports whether a failed GSO send may have failed because
// of GSO itself, so that its datagrams could still go one by one: EIO
// when the device cannot checksum the segments, EINVAL when a segment
// does not fit the route's MTU (or some IPv6 setups reject GSO), and
// EOPNOTSUPP, taken to mean the same.
func gsoPathError(e syscall.Errno) bool {
	return e == unix.EIO || e == unix.EINVAL || e == unix.EOPNOTSUPP
}

package batchio

import (
	"encoding/binary"
	"net/netip"
)

// Ethernet frames of UDP datagrams as the AF_XDP path reads and writes
// them: Ethernet II, then IPv4 without options or IPv6 without extension
// headers, then UDP. Anything else the XDP program passes to the kernel;
// the parser checks again, since the receive ring is the kernel's word
// about what the program sent, and a frame it refuses is dropped and
// counted, never half-read.

const (
	ethHeaderLen  = 14
	ipv4HeaderLen = 20
	ipv6HeaderLen = 40
	udpHdrLen     = 8
	// The headers written before a payload.
	frameHeader4 = ethHeaderLen + ipv4HeaderLen + udpHdrLen
	frameHeader6 = ethHeaderLen + ipv6HeaderLen + udpHdrLen

	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	protoUDP      = 17
	frameTTL      = 64
)

// frameReason says why parseFrame refused a frame.
type frameReason uint8

const (
	frameOK        frameReason = iota
	frameShort                 // shorter than its headers say
	frameNotIP                 // not IPv4 or IPv6
	frameIPHeader              // IPv4 options, a bad version or a bad header checksum
	frameFragment              // an IPv4 fragment
	frameNotUDP                // not UDP (or an IPv6 extension header)
	frameUDPLength             // UDP length disagrees with the IP length
	frameChecksum              // bad UDP checksum (or 0 over IPv6)
	framePort                  // not to the port
)

// udpFrame is what parseFrame found in a frame.
type udpFrame struct {
	srcMAC [6]byte
	src    netip.AddrPort
	dst    netip.Addr
	// The payload is frame[off : off+n].
	off, n int
	// partial: the UDP checksum field held only the pseudo-header's sum.
	partial bool
}

// checkUDP verifies a UDP checksum. A frame from a virtual device (veth,
// a local bridge) may still have its checksum offload pending: the field
// holds the folded pseudo-header sum and the sender's kernel trusts the
// payload, as the receiver's kernel does with such a socket buffer. Such
// frames pass, marked partial; on a physical link one of them is a
// corrupted frame that matches by a 1 in 65,536 chance.
//
// The pending form is checked first: it costs one compare, where the full
// sum reads the whole payload, and on veth every frame has it.
func (u *udpFrame) checkUDP(udp []byte, pseudo uint64) bool {
	u.partial = binary.BigEndian.Uint16(udp[6:8]) == fold(pseudo)
	return u.partial || fold(checksum(udp, pseudo)) == 0xffff
}

// parseFrame reads a UDP datagram to port out of an Ethernet frame,
// checking lengths, the IPv4 header checksum and the UDP checksum. It
// never reads outside f.
func parseFrame(f []byte, port uint16, u *udpFrame) frameReason {
	if len(f) < ethHeaderLen {
		return frameShort
	}
	copy(u.srcMAC[:], f[6:12])
	var udp []byte
	switch binary.BigEndian.Uint16(f[12:14]) {
	case etherTypeIPv4:
		ip := f[ethHeaderLen:]
		if len(ip) < ipv4HeaderLen {
			return frameShort
		}
		if ip[0] != 0x45 || fold(checksum(ip[:ipv4HeaderLen], 0)) != 0xffff {
			return frameIPHeader
		}
		total := int(binary.BigEndian.Uint16(ip[2:4]))
		if total < ipv4HeaderLen || total > len(ip) {
			return frameShort
		}
		if binary.BigEndian.Uint16(ip[6:8])&0x3fff != 0 {
			return frameFragment
		}
		if ip[9] != protoUDP {
			return frameNotUDP
		}
		udp = ip[ipv4HeaderLen:total]
		if len(udp) < udpHdrLen {
			return frameShort
		}
		if int(binary.BigEndian.Uint16(udp[4:6])) != len(udp) {
			return frameUDPLength
		}
		// A zero checksum means none was computed (IPv4 only).
		if binary.BigEndian.Uint16(udp[6:8]) != 0 && !u.checkUDP(udp, pseudoSum(ip[12:16], ip[16:20], len(udp))) {
			return frameChecksum
		}
		u.src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[12:16])), binary.BigEndian.Uint16(udp[0:2]))
		u.dst = netip.AddrFrom4([4]byte(ip[16:20]))
		u.off = ethHeaderLen + ipv4HeaderLen + udpHdrLen
	case etherTypeIPv6:
		ip := f[ethHeaderLen:]
		if len(ip) < ipv6HeaderLen {
			return frameShort
		}
		if ip[0]>>4 != 6 {
			return frameIPHeader
		}
		if ip[6] != protoUDP {
			return frameNotUDP
		}
		payload := int(binary.BigEndian.Uint16(ip[4:6]))
		if payload > len(ip)-ipv6HeaderLen {
			return frameShort
		}
		udp = ip[ipv6HeaderLen : ipv6HeaderLen+payload]
		if len(udp) < udpHdrLen {
			return frameShort
		}
		if int(binary.BigEndian.Uint16(udp[4:6])) != len(udp) {
			return frameUDPLength
		}
		// IPv6 makes the UDP checksum mandatory (RFC 8200 8.1).
		if binary.BigEndian.Uint16(udp[6:8]) == 0 || !u.checkUDP(udp, pseudoSum(ip[8:24], ip[24:40], len(udp))) {
			return frameChecksum
		}
		u.src = netip.AddrPortFrom(netip.AddrFrom16([16]byte(ip[8:24])), binary.BigEndian.Uint16(udp[0:2]))
		u.dst = netip.AddrFrom16([16]byte(ip[24:40]))
		u.off = ethHeaderLen + ipv6HeaderLen + udpHdrLen
	default:
		return frameNotIP
	}
	if binary.BigEndian.Uint16(udp[2:4]) != port {
		return framePort
	}
	u.n = len(udp) - udpHdrLen
	return frameOK
}

// frameHeaderLen is the length of the headers buildFrame writes for a
// datagram from src.
func frameHeaderLen(src netip.Addr) int {
	if src.Is4() {
		return frameHeader4
	}
	return frameHeader6
}

// buildFrame writes the Ethernet, IP and UDP headers of a datagram of n
// payload bytes, already in place at f[frameHeaderLen(src.Addr()):], from
// src to dst (both IPv4, or both IPv6), and returns the frame's length. f
// must hold the headers and the payload.
func buildFrame(f []byte, srcMAC, dstMAC *[6]byte, src, dst netip.AddrPort, n int) int {
	copy(f[0:6], dstMAC[:])
	copy(f[6:12], srcMAC[:])
	ulen := udpHdrLen + n
	var udp []byte
	var sum uint64
	if src.Addr().Is4() {
		binary.BigEndian.PutUint16(f[12:14], etherTypeIPv4)
		ip := f[ethHeaderLen : ethHeaderLen+ipv4HeaderLen]
		ip[0], ip[1] = 0x45, 0
		binary.BigEndian.PutUint16(ip[2:4], uint16(ipv4HeaderLen+ulen))
		binary.BigEndian.PutUint16(ip[4:6], 0)      // ID: unused, DF is set
		binary.BigEndian.PutUint16(ip[6:8], 0x4000) // DF
		ip[8], ip[9] = frameTTL, protoUDP
		ip[10], ip[11] = 0, 0
		s4, d4 := src.Addr().As4(), dst.Addr().As4()
		copy(ip[12:16], s4[:])
		copy(ip[16:20], d4[:])
		binary.BigEndian.PutUint16(ip[10:12], ^fold(checksum(ip, 0)))
		udp = f[frameHeader4-udpHdrLen : frameHeader4+n]
		sum = pseudoSum(s4[:], d4[:], ulen)
	} else {
		binary.BigEndian.PutUint16(f[12:14], etherTypeIPv6)
		ip := f[ethHeaderLen : ethHeaderLen+ipv6HeaderLen]
		binary.BigEndian.PutUint32(ip[0:4], 6<<28)
		binary.BigEndian.PutUint16(ip[4:6], uint16(ulen))
		ip[6], ip[7] = protoUDP, frameTTL
		s6, d6 := src.Addr().As16(), dst.Addr().As16()
		copy(ip[8:24], s6[:])
		copy(ip[24:40], d6[:])
		udp = f[frameHeader6-udpHdrLen : frameHeader6+n]
		sum = pseudoSum(s6[:], d6[:], ulen)
	}
	binary.BigEndian.PutUint16(udp[0:2], src.Port())
	binary.BigEndian.PutUint16(udp[2:4], dst.Port())
	binary.BigEndian.PutUint16(udp[4:6], uint16(ulen))
	udp[6], udp[7] = 0, 0
	c := ^fold(checksum(udp, sum))
	if c == 0 {
		c = 0xffff // 0 would mean "no checksum"
	}
	binary.BigEndian.PutUint16(udp[6:8], c)
	return len(f[:frameHeaderLen(src.Addr())+n])
}

// pseudoSum is the unfolded sum of the UDP pseudo-header of either family
// (the zero bytes add nothing, so one shape serves both).
func pseudoSum(src, dst []byte, ulen int) uint64 {
	s := checksum(src, 0)
	s = checksum(dst, s)
	return s + protoUDP + uint64(ulen)
}

// checksum adds b to sum as big-endian 16-bit words (an odd last byte
// padded with zero), four bytes at a time, without folding.
func checksum(b []byte, sum uint64) uint64 {
	for len(b) >= 8 {
		sum += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	if len(b) >= 4 {
		sum += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		sum += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint64(b[0]) << 8
	}
	return sum
}

// fold reduces a sum to 16 bits with end-around carries.
func fold(sum uint64) uint16 {
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}

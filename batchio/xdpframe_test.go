package batchio

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

var (
	testMACA = [6]byte{0x02, 0, 0, 0, 0, 0x0a}
	testMACB = [6]byte{0x02, 0, 0, 0, 0, 0x0b}
)

// naiveSum is the RFC 1071 checksum word by word, to check checksum's
// four-byte shortcut against.
func naiveSum(parts ...[]byte) uint16 {
	var all []byte
	for _, p := range parts {
		all = append(all, p...)
	}
	if len(all)%2 == 1 {
		all = append(all, 0)
	}
	var s uint32
	for i := 0; i < len(all); i += 2 {
		s += uint32(all[i])<<8 | uint32(all[i+1])
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

func testFrame(src, dst netip.AddrPort, payload []byte) []byte {
	f := make([]byte, frameHeaderLen(src.Addr())+len(payload))
	copy(f[frameHeaderLen(src.Addr()):], payload)
	return f[:buildFrame(f, &testMACA, &testMACB, src, dst, len(payload))]
}

func TestFrameRoundTrip(t *testing.T) {
	for _, tc := range []struct{ src, dst string }{
		{"198.18.0.1:40000", "198.18.0.2:5000"},
		{"[2001:2::1]:40000", "[2001:2::2]:5000"},
	} {
		src, dst := netip.MustParseAddrPort(tc.src), netip.MustParseAddrPort(tc.dst)
		for _, n := range []int{0, 1, 2, 3, 7, 64, 299, 1200} {
			payload := make([]byte, n)
			for i := range payload {
				payload[i] = byte(i*7 + n)
			}
			f := testFrame(src, dst, payload)
			var u udpFrame
			if r := parseFrame(f, dst.Port(), &u); r != frameOK {
				t.Fatalf("%v n=%d: reason %d", src, n, r)
			}
			if u.src != src || u.dst != dst.Addr() || u.srcMAC != testMACA {
				t.Fatalf("%v n=%d: parsed %v %v %x", src, n, u.src, u.dst, u.srcMAC)
			}
			if !bytes.Equal(f[u.off:u.off+u.n], payload) {
				t.Fatalf("%v n=%d: payload differs", src, n)
			}
			if !bytes.Equal(f[:6], testMACB[:]) {
				t.Fatalf("destination MAC %x", f[:6])
			}
			// The checksums against the word-by-word sum.
			hl := frameHeaderLen(src.Addr())
			udp := f[hl-udpHdrLen:]
			var pseudo []byte
			if src.Addr().Is4() {
				ip := f[ethHeaderLen : ethHeaderLen+ipv4HeaderLen]
				if naiveSum(ip) != 0xffff {
					t.Fatalf("IPv4 header checksum wrong: %x", ip)
				}
				pseudo = append(append(bytes.Clone(ip[12:20]), 0, protoUDP), byte(len(udp)>>8), byte(len(udp)))
			} else {
				ip := f[ethHeaderLen : ethHeaderLen+ipv6HeaderLen]
				pseudo = append(bytes.Clone(ip[8:40]), 0, 0, byte(len(udp)>>8), byte(len(udp)), 0, 0, 0, protoUDP)
			}
			if naiveSum(pseudo, udp) != 0xffff {
				t.Fatalf("%v n=%d: UDP checksum wrong", src, n)
			}
			if binary.BigEndian.Uint16(udp[6:8]) == 0 {
				t.Fatal("UDP checksum 0")
			}
		}
	}
}

func TestFrameRefused(t *testing.T) {
	v4 := testFrame(netip.MustParseAddrPort("198.18.0.1:40000"), netip.MustParseAddrPort("198.18.0.2:5000"), []byte("hello"))
	v6 := testFrame(netip.MustParseAddrPort("[2001:2::1]:40000"), netip.MustParseAddrPort("[2001:2::2]:5000"), []byte("hello"))
	mod := func(f []byte, fn func(f []byte)) []byte {
		f = bytes.Clone(f)
		fn(f)
		return f
	}
	for _, tc := range []struct {
		name string
		f    []byte
		want frameReason
	}{
		{"empty", nil, frameShort},
		{"eth only", v4[:ethHeaderLen], frameShort},
		{"arp", mod(v4, func(f []byte) { f[12], f[13] = 0x08, 0x06 }), frameNotIP},
		{"v4 options", mod(v4, func(f []byte) { f[14] = 0x46 }), frameIPHeader},
		{"v4 header checksum", mod(v4, func(f []byte) { f[22]-- }), frameIPHeader},
		{"v4 truncated", v4[:len(v4)-1], frameShort},
		{"v4 payload bit flipped", mod(v4, func(f []byte) { f[len(f)-1] ^= 1 }), frameChecksum},
		{"v4 other port", v4, framePort},
		{"v6 payload bit flipped", mod(v6, func(f []byte) { f[len(f)-1] ^= 1 }), frameChecksum},
		{"v6 zero checksum", mod(v6, func(f []byte) { f[frameHeader6-2], f[frameHeader6-1] = 0, 0 }), frameChecksum},
		{"v6 extension header", mod(v6, func(f []byte) { f[ethHeaderLen+6] = 0 }), frameNotUDP},
		{"v6 truncated", v6[:len(v6)-1], frameShort},
		{"v6 udp length", mod(v6, func(f []byte) { f[frameHeader6-3]-- }), frameUDPLength},
	} {
		port := uint16(5000)
		if tc.name == "v4 other port" {
			port = 5001
		}
		var u udpFrame
		if r := parseFrame(tc.f, port, &u); r != tc.want {
			t.Errorf("%s: reason %d, want %d", tc.name, r, tc.want)
		}
	}
	// A fragment: the header checksum must be redone for the flag to be
	// what is refused.
	frag := bytes.Clone(v4)
	ip := frag[ethHeaderLen : ethHeaderLen+ipv4HeaderLen]
	binary.BigEndian.PutUint16(ip[6:8], 0x2000) // MF
	binary.BigEndian.PutUint16(ip[10:12], 0)
	binary.BigEndian.PutUint16(ip[10:12], ^fold(checksum(ip, 0)))
	var u udpFrame
	if r := parseFrame(frag, 5000, &u); r != frameFragment {
		t.Errorf("fragment: reason %d", r)
	}
}

func FuzzParseFrame(f *testing.F) {
	f.Add(testFrame(netip.MustParseAddrPort("198.18.0.1:40000"), netip.MustParseAddrPort("198.18.0.2:5000"), []byte("hello")))
	f.Add(testFrame(netip.MustParseAddrPort("[2001:2::1]:40000"), netip.MustParseAddrPort("[2001:2::2]:5000"), []byte("hello, world")))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var u udpFrame
		if parseFrame(b, 5000, &u) != frameOK {
			return
		}
		if u.off < 0 || u.n < 0 || u.off+u.n > len(b) {
			t.Fatalf("payload [%d:+%d] outside a %d-byte frame", u.off, u.n, len(b))
		}
		// What parses rebuilds to a frame that parses the same.
		g := make([]byte, frameHeaderLen(u.src.Addr())+u.n)
		copy(g[frameHeaderLen(u.src.Addr()):], b[u.off:u.off+u.n])
		g = g[:buildFrame(g, &testMACB, &u.srcMAC, u.src, netip.AddrPortFrom(u.dst, 5000), u.n)]
		var v udpFrame
		if r := parseFrame(g, 5000, &v); r != frameOK || v.src != u.src || v.dst != u.dst || v.n != u.n {
			t.Fatalf("rebuilt frame: reason %d, %+v vs %+v", r, v, u)
		}
	})
}

// TestFramePartialChecksum: a frame whose UDP checksum field holds only
// the pseudo-header sum (a veth peer's pending offload) is taken and
// marked partial; any other wrong value is refused.
func TestFramePartialChecksum(t *testing.T) {
	for _, tc := range []struct{ src, dst string }{
		{"198.18.0.1:40000", "198.18.0.2:5000"},
		{"[2001:2::1]:40000", "[2001:2::2]:5000"},
	} {
		src, dst := netip.MustParseAddrPort(tc.src), netip.MustParseAddrPort(tc.dst)
		f := testFrame(src, dst, []byte("partial"))
		hl := frameHeaderLen(src.Addr())
		udp := f[hl-udpHdrLen:]
		s16, d16 := src.Addr().AsSlice(), dst.Addr().AsSlice()
		binary.BigEndian.PutUint16(udp[6:8], fold(pseudoSum(s16, d16, len(udp))))
		var u udpFrame
		if r := parseFrame(f, 5000, &u); r != frameOK || !u.partial {
			t.Fatalf("%v: partial checksum: reason %d, partial %v", src, r, u.partial)
		}
		binary.BigEndian.PutUint16(udp[6:8], fold(pseudoSum(s16, d16, len(udp)))+1)
		if r := parseFrame(f, 5000, &u); r != frameChecksum {
			t.Fatalf("%v: wrong checksum: reason %d", src, r)
		}
		f = testFrame(src, dst, []byte("full"))
		if r := parseFrame(f, 5000, &u); r != frameOK || u.partial {
			t.Fatalf("%v: full checksum: reason %d, partial %v", src, r, u.partial)
		}
	}
}

package batchio

import (
	"encoding/binary"
	"net/netip"
)

// macTable maps peers' IP addresses to link-layer addresses for the AF_XDP
// path, which looks one up for every datagram it sends and checks one for
// every frame it receives. IPv4 addresses are keyed by their 32 bits (the
// runtime's fast path for 4-byte keys) and IPv6 ones by their 16 bytes,
// instead of by netip.Addr, whose hash and compare cost several times
// more. It holds at most limit addresses: a full table is cleared.
type macTable struct {
	v4    map[uint32][6]byte
	v6    map[[16]byte][6]byte
	limit int
}

// maxMACs is an AF_XDP conn's table limit.
const maxMACs = 1 << 16

func newMACTable(limit int) macTable {
	return macTable{v4: make(map[uint32][6]byte), v6: make(map[[16]byte][6]byte), limit: limit}
}

func (t *macTable) get(ip netip.Addr) ([6]byte, bool) {
	if ip.Is4() {
		a := ip.As4()
		mac, ok := t.v4[binary.BigEndian.Uint32(a[:])]
		return mac, ok
	}
	mac, ok := t.v6[ip.As16()]
	return mac, ok
}

// learn records mac for ip unless it is already there.
func (t *macTable) learn(ip netip.Addr, mac *[6]byte) {
	if old, ok := t.get(ip); ok && old == *mac {
		return
	}
	if len(t.v4)+len(t.v6) >= t.limit {
		clear(t.v4)
		clear(t.v6)
	}
	if ip.Is4() {
		a := ip.As4()
		t.v4[binary.BigEndian.Uint32(a[:])] = *mac
		return
	}
	t.v6[ip.As16()] = *mac
}

func (t *macTable) len() int { return len(t.v4) + len(t.v6) }

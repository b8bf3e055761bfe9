package webtransport

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
)

// SessionPrefix is where sessions' synthetic addresses come from: the IPv6
// discard-only prefix (RFC 6666). No host on the Internet has an address
// in it, so no UDP peer can share, or forge, a browser's address.
var SessionPrefix = netip.MustParsePrefix("100::/64")

// sessionPort is the port of every session address; the address alone is
// unique.
const sessionPort = 1

// sessionIDs numbers sessions process-wide, so that two Conns (shards of
// one server) never hand out the same address.
var sessionIDs atomic.Uint64

func nextSessionAddr() netip.AddrPort {
	return sessionAddr(sessionIDs.Add(1))
}

// sessionAddr is the address of session id: 100::/64 with id in the low
// 64 bits.
func sessionAddr(id uint64) netip.AddrPort {
	var b [16]byte
	b[0] = 0x01
	binary.BigEndian.PutUint64(b[8:], id)
	return netip.AddrPortFrom(netip.AddrFrom16(b), sessionPort)
}

// sessionID is the inverse of sessionAddr; ok is false for an address not
// made by it.
func sessionID(a netip.AddrPort) (id uint64, ok bool) {
	ip := a.Addr()
	if !ip.Is6() || ip.Zone() != "" || a.Port() != sessionPort || !SessionPrefix.Contains(ip) {
		return 0, false
	}
	b := ip.As16()
	id = binary.BigEndian.Uint64(b[8:])
	return id, id != 0
}

// IsSessionAddr reports whether a is a WebTransport session's synthetic
// address.
func IsSessionAddr(a netip.AddrPort) bool {
	_, ok := sessionID(a)
	return ok
}

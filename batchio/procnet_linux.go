//go:build linux

package batchio

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
)

// procSocket is one row of /proc/net/udp{,6}.
type procSocket struct {
	local netip.AddrPort
	inode uint64
}

// parseProcNet reads a socket table: a header line, then rows whose second
// field is the local address (the IP as 32-bit words in host byte order,
// in hex, a colon, the port in hex) and whose tenth is the inode.
func parseProcNet(r io.Reader, ipv6 bool) ([]procSocket, error) {
	var out []procSocket
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if line == 1 || len(f) == 0 {
			continue // the header
		}
		if len(f) < 10 {
			return nil, fmt.Errorf("line %d: %d fields; want at least 10", line, len(f))
		}
		local, err := parseProcAddr(f[1], ipv6)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: inode %q", line, f[9])
		}
		out = append(out, procSocket{local, inode})
	}
	return out, sc.Err()
}

// parseProcAddr reads "0100007F:9C40" (127.0.0.1:40000 on a little-endian
// machine) or its 32-digit IPv6 form.
func parseProcAddr(s string, ipv6 bool) (netip.AddrPort, error) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	want := 8
	if ipv6 {
		want = 32
	}
	raw, err := hex.DecodeString(ipHex)
	if !ok || err != nil || len(ipHex) != want {
		return netip.AddrPort{}, fmt.Errorf("address %q", s)
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port in %q", s)
	}
	// Each 32-bit word was printed as a number: undo host byte order.
	var ip [16]byte
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr := netip.AddrFrom16(ip)
	if !ipv6 {
		addr = netip.AddrFrom4([4]byte(ip[:4]))
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

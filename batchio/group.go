package batchio

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrAddrServed reports that a listen address is already served by a
// socket this group did not open, typically another server process.
var ErrAddrServed = errors.New("address already served by another socket")

// ListenGroup opens n sockets on addr (SO_REUSEPORT when n > 1, so the
// kernel spreads flows over them) and makes sure the group is the
// address's only one. The kernel lets any process of the same user join
// a SO_REUSEPORT group, and would then split new flows between two
// servers with different keys; ListenGroup refuses that with an error
// wrapping ErrAddrServed that names the address. On Linux it checks
// twice: before binding, a probe socket without SO_REUSEPORT must bind
// (so a running group is left untouched); after binding, the system's
// socket table (/proc/self/net/udp or udp6) must show no socket on an
// overlapping address (same port; the same address, or either one the
// wildcard) other than the group's own. Of two groups binding at once
// at least one fails, possibly both. Elsewhere it only opens the sockets.
// A port of 0 is replaced by the port the first socket got.
func ListenGroup(addr netip.AddrPort, n int, cfg Config) ([]Conn, error) {
	if n < 1 {
		return nil, fmt.Errorf("batchio: ListenGroup of %d sockets; want at least 1", n)
	}
	if cfg.XDP.Mode != XDPOff {
		return listenXDP(addr, n, cfg)
	}
	if n > 1 {
		cfg.ReusePort = true
	}
	if cfg.ReusePort && addr.Port() != 0 {
		if err := probeFree(addr); err != nil {
			return nil, err
		}
	}
	conns := make([]Conn, 0, n)
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for range n {
		c, err := Listen(addr, cfg)
		if err != nil {
			closeAll()
			return nil, err
		}
		conns = append(conns, c)
		addr = c.LocalAddr() // the rest share the port the first got
	}
	if cfg.ReusePort {
		if err := checkAlone(conns); err != nil {
			closeAll()
			return nil, err
		}
	}
	return conns, nil
}

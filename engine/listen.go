package engine

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/netcode-go/netcode/batchio"
)

// ListenServer opens a UDP socket on each bind address (an IPv4 and an IPv6
// one to serve both families) with batchio.Listen and starts a server on
// them. Close closes the sockets.
func ListenServer(cfg ServerConfig, binds ...netip.AddrPort) (*Server, error) {
	if len(binds) == 0 {
		return nil, errors.New("netcode: ListenServer needs at least one bind address")
	}
	conns := make([]batchio.Conn, 0, len(binds))
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for _, b := range binds {
		c, err := batchio.Listen(b, batchio.MmsgConfig{})
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("netcode: server socket: %w", err)
		}
		conns = append(conns, c)
	}
	s, err := NewServer(cfg, conns...)
	if err != nil {
		closeAll()
		return nil, err
	}
	s.owned = conns
	return s, nil
}

// DialClient opens an IPv4 socket and, where the system has IPv6, an IPv6
// socket on ephemeral ports, and returns a client that uses them for server
// addresses of either family. Close closes the sockets.
func DialClient(cfg ClientConfig) (*Client, error) {
	cfg4 := batchio.MmsgConfig{RecvBuffer: 256 << 10, SendBuffer: 256 << 10}
	c4, err := batchio.Listen(netip.MustParseAddrPort("0.0.0.0:0"), cfg4)
	if err != nil {
		return nil, fmt.Errorf("netcode: client socket: %w", err)
	}
	conns := []batchio.Conn{c4}
	if c6, err := batchio.Listen(netip.MustParseAddrPort("[::]:0"), cfg4); err == nil {
		conns = append(conns, c6)
	}
	c, err := NewClient(cfg, conns...)
	if err != nil {
		for _, conn := range conns {
			conn.Close()
		}
		return nil, err
	}
	c.owned = conns
	return c, nil
}

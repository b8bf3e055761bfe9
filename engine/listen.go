package engine

import (
	"errors"
	"fmt"
	"log/slog"
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
		// GSO is on by default: a run of datagrams to one client goes out
		// in one call.
		c, err := batchio.Listen(b, batchio.Config{})
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("netcode: server socket: %w", err)
		}
		warnBufferShortfall(cfg.Logger, c)
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
	// GSO (the default) only touches runs of equal datagrams to one
	// address, such as the redundant disconnect packets.
	cfg4 := batchio.Config{RecvBuffer: 256 << 10, SendBuffer: 256 << 10}
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

// warnBufferShortfall logs a warning when the kernel granted a socket less
// buffer than asked for (raise net.core.rmem_max/wmem_max, or run with
// CAP_NET_ADMIN): a burst larger than the buffer is dropped by the kernel.
func warnBufferShortfall(log *slog.Logger, c batchio.Conn) {
	m, ok := batchio.As[batchio.StatsReader](c)
	if !ok || log == nil {
		return
	}
	s := m.Stats()
	rw, rg, sw, sg := s.RecvBufferWant, s.RecvBufferGot, s.SendBufferWant, s.SendBufferGot
	if (rg == 0 || rg >= rw) && (sg == 0 || sg >= sw) {
		return // granted in full, or not known
	}
	log.Warn("netcode: kernel granted smaller socket buffers than asked",
		slog.String("addr", c.LocalAddr().String()),
		slog.Int("recv_asked", rw), slog.Int("recv_got", rg),
		slog.Int("send_asked", sw), slog.Int("send_got", sg))
}

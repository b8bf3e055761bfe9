package engine

import (
	"net/netip"
	"testing"

	"github.com/netcode-go/netcode/batchio"
)

// The real-network end-to-end tests run one body over each transport:
// sockets on loopback, and (Linux, as root) the server's conns on the
// AF_XDP path of a veth testbed with the clients on sockets in the peer
// namespace (transport_linux_test.go).

// e2eNet is a real network for a test: where the server and its clients
// bind, and how their conns are opened.
type e2eNet interface {
	// serverIP and clientIP are the addresses the server and the
	// clients bind, of the family v6 says.
	serverIP(v6 bool) netip.Addr
	clientIP(v6 bool) netip.Addr
	// listenServer opens n conns on addr for one server (a port shared
	// by SO_REUSEPORT sockets, or AF_XDP conns on the queues of one
	// interface).
	listenServer(t testing.TB, addr netip.AddrPort, n int, cfg batchio.Config) []batchio.Conn
	// listen starts a server with engine.Listen on bind.
	listen(t testing.TB, cfg ServerConfig, sock batchio.Config, bind netip.AddrPort) *Server
	// listenClient opens a client's conn.
	listenClient(t testing.TB, addr netip.AddrPort, cfg batchio.Config) batchio.Conn
	// checkServer fails the test unless the server's conns carried at
	// least rx and tx datagrams the way the network is meant to carry
	// them (on the AF_XDP path: through the rings).
	checkServer(t testing.TB, conns []batchio.Conn, rx, tx uint64)
}

// e2eTransport names a network and opens one for a test (or skips it).
type e2eTransport struct {
	name string
	open func(t *testing.T) e2eNet
}

var loopbackTransport = e2eTransport{"loopback", func(*testing.T) e2eNet { return loopbackNet{} }}

// loopbackNet is sockets on 127.0.0.1 and ::1; the conns are closed by
// the test's cleanup (the tests close them earlier too).
type loopbackNet struct{}

func (loopbackNet) serverIP(v6 bool) netip.Addr {
	if v6 {
		return netip.IPv6Loopback()
	}
	return netip.MustParseAddr("127.0.0.1")
}

func (n loopbackNet) clientIP(v6 bool) netip.Addr { return n.serverIP(v6) }

func (loopbackNet) listenServer(t testing.TB, addr netip.AddrPort, k int, cfg batchio.Config) []batchio.Conn {
	t.Helper()
	conns, err := batchio.ListenGroup(addr, k, cfg)
	if err != nil {
		t.Skipf("cannot listen on %v: %v", addr, err)
	}
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	return conns
}

func (loopbackNet) listen(t testing.TB, cfg ServerConfig, sock batchio.Config, bind netip.AddrPort) *Server {
	t.Helper()
	srv, err := Listen(cfg, sock, bind)
	if err != nil {
		t.Skipf("cannot listen on %v: %v", bind, err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func (loopbackNet) listenClient(t testing.TB, addr netip.AddrPort, cfg batchio.Config) batchio.Conn {
	t.Helper()
	c, err := batchio.Listen(addr, cfg)
	if err != nil {
		t.Skipf("cannot listen on %v: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (loopbackNet) checkServer(testing.TB, []batchio.Conn, uint64, uint64) {}

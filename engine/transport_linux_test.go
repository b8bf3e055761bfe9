//go:build linux

package engine

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
)

// e2eTransports are the networks the real-network tests run over.
func e2eTransports() []e2eTransport { return []e2eTransport{loopbackTransport, xdpTransport(1)} }

// xdpTransport is the AF_XDP path on a veth testbed of queues queues:
// the server's conns in namespace A on the rings of its end, the clients'
// sockets in B. Skipped where namespaces cannot be made (not root); where
// they can, AF_XDP is expected (batchiotest.Veth.Unavailable).
func xdpTransport(queues int) e2eTransport {
	return e2eTransport{"xdp", func(t *testing.T) e2eNet {
		return vethNet{batchiotest.NewVeth(t, batchiotest.VethConfig{Queues: queues})}
	}}
}

type vethNet struct{ v *batchiotest.Veth }

func (n vethNet) serverIP(v6 bool) netip.Addr {
	if v6 {
		return n.v.A6
	}
	return n.v.A4
}

func (n vethNet) clientIP(v6 bool) netip.Addr {
	if v6 {
		return n.v.B6
	}
	return n.v.B4
}

func (n vethNet) listenServer(t testing.TB, addr netip.AddrPort, k int, cfg batchio.Config) []batchio.Conn {
	t.Helper()
	return n.v.ListenXDP(t, addr, k, cfg)
}

func (n vethNet) listen(t testing.TB, cfg ServerConfig, sock batchio.Config, bind netip.AddrPort) *Server {
	t.Helper()
	var srv *Server
	err := n.v.A.In(func() (err error) {
		srv, err = Listen(cfg, n.v.XDPConfig(sock), bind)
		return err
	})
	if err != nil {
		if errors.Is(err, batchio.ErrXDPUnsupported) {
			n.v.Unavailable(t, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func (n vethNet) listenClient(t testing.TB, addr netip.AddrPort, cfg batchio.Config) batchio.Conn {
	t.Helper()
	return n.v.B.Listen(t, addr, cfg)
}

func (n vethNet) checkServer(t testing.TB, conns []batchio.Conn, rx, tx uint64) {
	t.Helper()
	gotRx, gotTx := batchiotest.XDPTraffic(t, conns...)
	t.Logf("over the AF_XDP rings: %d datagrams in, %d out", gotRx, gotTx)
	if gotRx < rx || gotTx < tx {
		t.Fatalf("the server's AF_XDP rings carried %d datagrams in and %d out, want at least %d and %d", gotRx, gotTx, rx, tx)
	}
}

// xdpTrafficOf is batchiotest.XDPTraffic.
func xdpTrafficOf(t testing.TB, conns ...batchio.Conn) (rx, tx uint64) {
	t.Helper()
	return batchiotest.XDPTraffic(t, conns...)
}

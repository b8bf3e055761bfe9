//go:build linux

package bench

import (
	"net/netip"
	"testing"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/engine"
)

// The end-to-end tests run one body over two networks: the server and the
// load on loopback sockets, and the server's conns on the AF_XDP path of a
// veth testbed (namespace A) with the load in the peer namespace (B), its
// shared sockets' clients on 198.19.0.0/16 as on scripts/testbed.sh.

// testNets names the networks; openTestNet opens one for a test.
var testNets = []string{"loopback", "xdp"}

// testClientNet is the block the load's shared sockets take client
// addresses from on the testbed.
var testClientNet = netip.MustParsePrefix("198.19.0.0/16")

// testNet is an open network: v is nil on loopback.
type testNet struct {
	v *batchiotest.Veth
}

// openTestNet opens the network called name, or skips the test (xdp where
// namespaces cannot be made).
func openTestNet(t *testing.T, name string) *testNet {
	t.Helper()
	if name == "loopback" {
		return &testNet{}
	}
	v := batchiotest.NewVeth(t, batchiotest.VethConfig{})
	v.RouteToB(t, testClientNet)
	return &testNet{v: v}
}

// serverConns opens the conns of a server of shards shards: nil on
// loopback (engine.Listen opens its own sockets), AF_XDP conns on the
// testbed, closed by the test's cleanup.
func (n *testNet) serverConns(t *testing.T, shards int) []batchio.Conn {
	t.Helper()
	if n.v == nil {
		return nil
	}
	return n.v.ListenXDP(t, netip.AddrPortFrom(n.v.A4, 0), max(shards, 1), batchio.Config{})
}

// listenServer starts a netcode server: engine.Listen on 127.0.0.1, or
// NewServer on the testbed's AF_XDP conns. It returns the conns it was
// given (nil on loopback).
func (n *testNet) listenServer(t *testing.T, cfg engine.ServerConfig) (*engine.Server, []batchio.Conn) {
	t.Helper()
	conns := n.serverConns(t, cfg.Shards)
	if conns == nil {
		srv, err := engine.Listen(cfg, batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
		if err != nil {
			t.Fatal(err)
		}
		return srv, nil
	}
	cfg.Shards = 0
	srv, err := engine.NewServer(cfg, conns...)
	if err != nil {
		t.Fatal(err)
	}
	return srv, conns
}

// listenConn opens one conn for a server (the bare control's).
func (n *testNet) listenConn(t *testing.T) batchio.Conn {
	t.Helper()
	if conns := n.serverConns(t, 1); conns != nil {
		return conns[0]
	}
	conn, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// newLoad is NewLoad, on the testbed in B with its shared sockets'
// clients on testClientNet (a client with a socket of its own binds the
// address the route to the server picks, B4).
func (n *testNet) newLoad(cfg LoadConfig) (*Load, error) {
	if n.v == nil {
		return NewLoad(cfg)
	}
	cfg.ClientNet = testClientNet
	var l *Load
	err := n.v.B.In(func() (err error) {
		l, err = NewLoad(cfg)
		return err
	})
	return l, err
}

// check fails the test unless the server's AF_XDP conns (none on
// loopback) carried at least rx datagrams in and tx out through their
// rings.
func (n *testNet) check(t *testing.T, conns []batchio.Conn, rx, tx uint64) {
	t.Helper()
	if n.v == nil {
		return
	}
	gotRx, gotTx := batchiotest.XDPTraffic(t, conns...)
	t.Logf("over the AF_XDP rings: %d datagrams in, %d out", gotRx, gotTx)
	if gotRx < rx || gotTx < tx {
		t.Fatalf("the server's AF_XDP rings carried %d datagrams in and %d out, want at least %d and %d", gotRx, gotTx, rx, tx)
	}
}

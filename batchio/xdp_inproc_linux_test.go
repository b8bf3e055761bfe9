//go:build linux

package batchio_test

import (
	"net"
	"net/netip"
	"os/exec"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
)

// The AF_XDP conn opened in a namespace by a thread that then leaves it
// (batchiotest.Veth) keeps working from any thread: what it reads from the
// kernel after Listen is read from its own namespace.

// TestXDPNeighbourInConnNamespace: a first datagram to a peer the conn has
// never heard from goes over the ring when the neighbour table of the
// conn's namespace knows the peer, though the sending thread is in
// another namespace (whose table does not).
func TestXDPNeighbourInConnNamespace(t *testing.T) {
	v := batchiotest.NewVeth(t, batchiotest.VethConfig{})
	peer := v.B.Listen(t, netip.AddrPortFrom(v.B4, 0), batchio.Config{})
	var mac net.HardwareAddr
	if err := v.B.In(func() error {
		ifi, err := net.InterfaceByName(v.IfB)
		mac = ifi.HardwareAddr
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ip", "-n", v.A.Name, "neigh", "replace", v.B4.String(),
		"lladdr", mac.String(), "dev", v.IfA, "nud", "permanent").CombinedOutput(); err != nil {
		t.Fatalf("ip neigh: %v: %s", err, out)
	}
	srv := v.ListenXDP(t, netip.AddrPortFrom(v.A4, 0), 1, batchio.Config{})[0]
	msg := []batchio.Message{{Buf: []byte("hello"), N: 5, Addr: peer.LocalAddr()}}
	if n, err := srv.WriteBatch(msg); n != 1 || err != nil {
		t.Fatalf("WriteBatch: %d, %v", n, err)
	}
	in := []batchio.Message{{Buf: make([]byte, 64)}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, err := peer.ReadBatch(in); err != nil {
			t.Fatal(err)
		} else if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the peer got nothing in 5 s")
		}
		peer.WaitRead(time.Now().Add(10 * time.Millisecond))
	}
	if string(in[0].Buf[:in[0].N]) != "hello" || in[0].Addr != srv.LocalAddr() {
		t.Fatalf("peer got %q from %v", in[0].Buf[:in[0].N], in[0].Addr)
	}
	if xs := srv.(batchio.XDPStatsReader).XDPStats(); xs.KernelTx != 0 {
		t.Fatalf("sent through the kernel socket (%+v): the neighbour table was read in another namespace", xs)
	}
	if _, tx := batchiotest.XDPTraffic(t, srv); tx != 1 {
		t.Fatalf("%d datagrams sent over the ring, want 1", tx)
	}
}

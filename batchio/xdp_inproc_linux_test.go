//go:build linux

package batchio_test

import (
	"net"
	"net/netip"
	"os/exec"
	"syscall"
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
	knowPeer(t, v)
	srv := v.ListenXDP(t, netip.AddrPortFrom(v.A4, 0), 1, batchio.Config{})[0]
	msg := []batchio.Message{{Buf: []byte("hello"), N: 5, Addr: peer.LocalAddr()}}
	if n, err := srv.WriteBatch(msg); n != 1 || err != nil {
		t.Fatalf("WriteBatch: %d, %v", n, err)
	}
	in := []batchio.Message{{Buf: make([]byte, 64)}}
	if !readOne(t, peer, in, 5*time.Second) {
		t.Fatal("the peer got nothing in 5 s")
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

// TestXDPTxLeft: frames the device pushed back stay in the transmit ring
// (counted in TxLeft) and go out at the conn's next read, with no further
// write: in copy mode only a kick or a poll of the socket sends them, and
// a manual-mode server reads without waiting. The conn knows the peer from
// the neighbour table, so it has received nothing: after a receive the
// socket sits on the ready list of the conn's epoll instance, and the
// runtime's poller, polling the instance, would poll the socket and send.
func TestXDPTxLeft(t *testing.T) {
	v := batchiotest.NewVeth(t, batchiotest.VethConfig{})
	peer := v.B.Listen(t, netip.AddrPortFrom(v.B4, 0), batchio.Config{})
	knowPeer(t, v)
	srv := v.ListenXDP(t, netip.AddrPortFrom(v.A4, 0), 1, batchio.Config{})[0]
	batchio.SetXDPSendto(srv, func() syscall.Errno { return syscall.EBUSY })
	out := []batchio.Message{{Buf: []byte("pushed back"), N: 11, Addr: peer.LocalAddr()}}
	if n, err := srv.WriteBatch(out); n != 1 || err != nil {
		t.Fatalf("WriteBatch: %d, %v", n, err)
	}
	if xs := srv.(batchio.XDPStatsReader).XDPStats(); xs.TxLeft != 1 || xs.KernelTx != 0 {
		t.Fatalf("TxLeft %d, KernelTx %d after a send the device refused, want 1 and 0", xs.TxLeft, xs.KernelTx)
	}
	in := []batchio.Message{{Buf: make([]byte, 64)}}
	if readOne(t, peer, in, 50*time.Millisecond) {
		t.Fatalf("the peer got %q while the device refused it", in[0].Buf[:in[0].N])
	}
	// The device takes frames again; the kernel's own kick runs
	// from here on, and only the conn can call it.
	batchio.SetXDPSendto(srv, nil)
	if n, err := srv.ReadBatch(in); n != 0 || err != nil {
		t.Fatalf("ReadBatch: %d, %v", n, err)
	}
	if !readOne(t, peer, in, 5*time.Second) {
		t.Fatal("the peer got nothing after the conn's read")
	}
	if got := string(in[0].Buf[:in[0].N]); got != "pushed back" {
		t.Fatalf("the peer got %q", got)
	}
}

// knowPeer puts v's B end in the neighbour table of v's A namespace.
func knowPeer(t *testing.T, v *batchiotest.Veth) {
	t.Helper()
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
}

// readOne reads one datagram into in[0] within d.
func readOne(t *testing.T, c batchio.Conn, in []batchio.Message, d time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		n, err := c.ReadBatch(in)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		c.WaitRead(time.Now().Add(min(time.Until(deadline), 10*time.Millisecond)))
	}
}

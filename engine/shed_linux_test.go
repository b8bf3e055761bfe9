//go:build linux

package engine

import (
	"crypto/rand"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// TestSheddingLoopback: on a real socket, a flood of forged requests makes
// the server (in each mode) install the kernel filter, which then drops
// most of the flood before it is queued (counted by the kernel); a
// connected client stays connected; when the flood stops the filter goes.
func TestSheddingLoopback(t *testing.T) {
	t.Run("manual", func(t *testing.T) { testSheddingLoopback(t, true, batchio.SourceLimit{}) })
	t.Run("default", func(t *testing.T) { testSheddingLoopback(t, false, batchio.SourceLimit{}) })
	// The eBPF filter of the per-source limit sheds in its stead (a rate
	// no flood reaches, so that shedding does the dropping).
	t.Run("source-limit", func(t *testing.T) { testSheddingLoopback(t, false, batchio.SourceLimit{Rate: 1 << 30}) })
}

func testSheddingLoopback(t *testing.T, manual bool, limit batchio.SourceLimit) {
	w := &e2eWorld{t: t, handle: func(*Event) {}}
	defer w.close()
	sconn, lerr := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{RecvBuffer: 1 << 20, SendBuffer: 1 << 20, SourceLimit: limit})
	if lerr != nil {
		t.Skipf("cannot listen: %v", lerr)
	}
	w.closers = append(w.closers, sconn)
	shedder, ok := batchio.As[batchio.Shedder](sconn)
	if !ok {
		t.Skipf("%T cannot shed", sconn)
	}
	// A small budget, so that a flood one goroutine sends under -race is
	// well over the read rate (4 × 500/s).
	srv, err := NewServer(ServerConfig{ProtocolID: 0x5348, PrivateKey: testPrivateKey, MaxClients: 4, TokenDecryptsPerSecond: 500,
		Manual: manual}, sconn)
	if err != nil {
		t.Fatal(err)
	}
	w.server = srv
	cconn := listenOrSkip(t, "127.0.0.1:0")
	w.closers = append(w.closers, cconn)
	c, err := NewClient(ClientConfig{}, cconn)
	if err != nil {
		t.Fatal(err)
	}
	w.clients = append(w.clients, c)
	token, err := GenerateConnectToken(TokenParams{ProtocolID: 0x5348, PrivateKey: testPrivateKey, ClientID: 7,
		PublicAddresses: []netip.AddrPort{sconn.LocalAddr()}, ExpireSeconds: 30, TimeoutSeconds: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(token, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !w.runUntil(5*time.Second, func() bool { return c.State() == Connected }) {
		t.Fatalf("client state %v", c.State())
	}

	// The flood: requests with a valid header and a token that does not
	// decrypt, from one socket, until stopped (at most 10 s).
	bad := make([]byte, codec.RequestPacketBytes)
	var nonce [codec.ConnectTokenNonceBytes]byte
	private := make([]byte, codec.PrivateTokenBytes)
	rand.Read(nonce[:])
	rand.Read(private)
	if _, err := codec.WriteRequestPacket(bad, 0x5348, uint64(time.Now().Unix()+60), nonce[:], private); err != nil {
		t.Fatal(err)
	}
	tx, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(sconn.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; ; i++ {
			if i%256 == 0 {
				select {
				case <-stop:
					return
				default:
				}
				if time.Now().After(deadline) {
					return
				}
			}
			tx.Write(bad) // a full socket buffer just drops it
		}
	}()
	stopFlood := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopFlood()

	drops := shedder.KernelDrops()
	if !w.runUntil(5*time.Second, func() bool {
		return srv.Stats().ShedShift >= 2 && shedder.KernelDrops()-drops > 1000
	}) {
		t.Fatalf("under the flood: ShedShift %d, kernel drops %d, requests read %d",
			srv.Stats().ShedShift, shedder.KernelDrops()-drops, srv.Stats().PacketsIn)
	}
	w.runUntil(300*time.Millisecond, func() bool { return false })
	if c.State() != Connected {
		t.Fatalf("the client's state is %v under the flood", c.State())
	}
	stopFlood()
	if !w.runUntil(5*time.Second, func() bool { return srv.Stats().ShedShift == 0 }) {
		t.Fatalf("5 s after the flood ShedShift is still %d", srv.Stats().ShedShift)
	}
	// No filter: every datagram is queued again, so the kernel drops none.
	drops = shedder.KernelDrops()
	for range 100 {
		tx.Write(bad)
	}
	w.runUntil(100*time.Millisecond, func() bool { return false })
	if d := shedder.KernelDrops() - drops; d != 0 {
		t.Fatalf("the kernel dropped %d of 100 requests after the filter was removed", d)
	}
	if c.State() != Connected {
		t.Fatalf("the client's state is %v after the flood", c.State())
	}
}

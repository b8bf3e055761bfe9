//go:build linux

package engine

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// TestServerAllocsOverXDP: the server's per-packet path on an AF_XDP conn
// (a veth testbed) allocates nothing: a payload in through the receive
// ring, read by Update and polled, echoed by SendPacket and Flush out the
// transmit ring, and the client's read of the echo on its socket. The
// in-memory tests above cover the server's own code; this one the conn's
// part of the path too, and that the engine's use of it stays free.
func TestServerAllocsOverXDP(t *testing.T) {
	nw := xdpTransport(1).open(t)
	sconn := nw.listenServer(t, netip.AddrPortFrom(nw.serverIP(false), 0), 1, batchio.Config{})[0]
	// The real time, but the server started srvStartGrace ago: tokens
	// minted now are admitted without NewServer's wait for the restart
	// rule (seconds of CI).
	shift := -srvStartGrace
	srv, err := NewServer(ServerConfig{ProtocolID: srvProtocol, PrivateKey: testPrivateKey, MaxClients: 1, Manual: true,
		Clock: func() time.Time { return time.Now().Add(shift) }}, sconn)
	if err != nil {
		t.Fatal(err)
	}
	shift = 0
	defer srv.Close()
	c, err := NewClient(ClientConfig{}, nw.listenClient(t, netip.AddrPortFrom(nw.clientIP(false), 0), batchio.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tok, err := GenerateConnectToken(TokenParams{ProtocolID: srvProtocol, PrivateKey: testPrivateKey, ClientID: 7,
		PublicAddresses: []netip.AddrPort{sconn.LocalAddr()}, ExpireSeconds: 30, TimeoutSeconds: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(tok, time.Now()); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 200)
	for i := range payload {
		payload[i] = byte(i)
	}
	buf := make([]byte, codec.MaxPayloadBytes)
	slot, echoes := -1, 0
	handle := func(ev *Event) {
		if ev.Kind == EventPayload {
			slot = ev.ClientIndex
			if err := srv.SendPacket(ev.ClientIndex, ev.Payload); err != nil {
				t.Error(err)
			}
		}
	}
	// step runs both sides at the real time until done, 5 s at most.
	step := func(what string, done func() bool) {
		for deadline := time.Now().Add(5 * time.Second); !done(); {
			now := time.Now()
			if now.After(deadline) {
				t.Fatalf("%s: not within 5 s", what)
			}
			c.Update(now)
			srv.Update(now)
			srv.Poll(handle)
			srv.Flush()
			srv.Wait(now.Add(time.Millisecond))
		}
	}
	step("connect", func() bool { return c.State() == Connected && srv.NumConnectedClients() == 1 })
	roundTrip := func() {
		if err := c.SendPacket(payload); err != nil {
			t.Fatal(err)
		}
		c.Flush()
		step("echo", func() bool {
			n, _, ok := c.ReceivePacket(buf)
			if ok {
				if n != len(payload) || buf[n-1] != payload[n-1] {
					t.Fatalf("echo of %d bytes, want %d", n, len(payload))
				}
				echoes++
			}
			return ok
		})
	}
	for range 20 { // warm up: tables, pools, first keep-alives
		roundTrip()
	}
	_, txBefore := xdpTrafficOf(t, sconn)
	allocs := testing.AllocsPerRun(200, roundTrip)
	rx, tx := xdpTrafficOf(t, sconn)
	if allocs != 0 {
		t.Fatalf("a payload in and its echo out over AF_XDP allocate %v times", allocs)
	}
	if echoes != 20+201 || slot < 0 || tx-txBefore < 201 || rx < 221 {
		t.Fatalf("%d echoes (slot %d), %d datagrams in and %d out over the rings", echoes, slot, rx, tx-txBefore)
	}
}

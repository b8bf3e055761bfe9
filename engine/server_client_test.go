package engine

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

// TestServerWithClient runs the engine's own Client against the Server over
// in-memory conns: connect, exchange payloads both ways, disconnect.
func TestServerWithClient(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	clientAddr := netip.MustParseAddrPort("192.0.2.50:6000")
	cconn := batchiotest.NewConn(clientAddr)
	c, err := NewClient(ClientConfig{}, cconn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pump := func() {
		for _, d := range h.conns[0].Sent() {
			if d.Addr == clientAddr {
				cconn.Push(srvAddr, d.Data)
			}
		}
		for _, d := range cconn.Sent() {
			if d.Addr == srvAddr {
				h.conns[0].Push(clientAddr, d.Data)
			}
		}
	}
	tick := func() {
		h.now = h.now.Add(10 * time.Millisecond)
		c.Update(h.now)
		pump()
		h.update()
		pump()
	}
	if err := c.Connect(h.srvToken(77, nil), h.now); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if c.State() == Connected {
			break
		}
		tick()
	}
	if c.State() != Connected || h.s.NumConnectedClients() != 1 || h.s.slotID(c.ClientIndex()) != 77 {
		t.Fatalf("client state %v, server has %d clients", c.State(), h.s.NumConnectedClients())
	}
	i := c.ClientIndex()
	if err := c.SendPacket([]byte("to server")); err != nil {
		t.Fatal(err)
	}
	if err := h.s.SendPacket(i, []byte("to client")); err != nil {
		t.Fatal(err)
	}
	tick()
	tick()
	buf := make([]byte, codec.MaxPayloadBytes)
	if b, ok := h.receive(i); !ok || string(b) != "to server" {
		t.Fatalf("server received %q, %v", b, ok)
	}
	if n, _, ok := c.ReceivePacket(buf); !ok || string(buf[:n]) != "to client" {
		t.Fatalf("client received %q, %v", buf[:n], ok)
	}
	for range 20 { // idle: keep-alives keep both sides up past the 5 s timeout
		for range 50 {
			tick()
		}
	}
	if c.State() != Connected || !h.s.slotConnected(i) {
		t.Fatalf("idle connection dropped: client %v, server %v", c.State(), h.s.slotConnected(i))
	}
	c.Disconnect(h.now)
	pump()
	h.update()
	if h.s.slotConnected(i) || len(h.disconnects) != 1 || h.disconnects[0].reason != DisconnectClientDisconnected {
		t.Fatalf("server after client disconnect: connected %v, events %v", h.s.slotConnected(i), h.disconnects)
	}
}

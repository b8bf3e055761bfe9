package engine

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

// TestEndToEndSimulatedNetwork: 64 clients over a network with 10% loss,
// 50 ms latency and 50 ms jitter (both directions), on a fake clock. All
// connect; payloads flow both ways; half the clients disconnect and the
// other half vanish; afterwards no slot, address, client id or encryption
// mapping is left behind.
func TestEndToEndSimulatedNetwork(t *testing.T) {
	const numClients = 64
	now := time.Unix(1_800_000_000, 0).Add(-srvStartGrace) // the server starts before the tokens
	clock := func() time.Time { return now }
	network, err := batchiotest.NewMemNetwork(batchiotest.MemConfig{InboxSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	sim := func(seed uint64, addr string) *batchiotest.SimConn {
		c, err := network.Listen(netip.MustParseAddrPort(addr))
		if err != nil {
			t.Fatal(err)
		}
		s, err := batchiotest.NewSimConn(c, batchiotest.SimConfig{Latency: 50 * time.Millisecond, Jitter: 50 * time.Millisecond, Loss: 0.1, Seed: seed}, clock)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sconn := sim(1, "10.0.0.1:40000")
	srv, err := NewServer(ServerConfig{ProtocolID: 9, PrivateKey: testPrivateKey, MaxClients: numClients, Manual: true, Clock: clock}, sconn)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(srvStartGrace)
	clients := make([]*Client, numClients)
	for k := range clients {
		c, err := NewClient(ClientConfig{}, sim(uint64(100+k), fmt.Sprintf("10.1.0.%d:5000", k+1)))
		if err != nil {
			t.Fatal(err)
		}
		token, err := GenerateConnectToken(TokenParams{ProtocolID: 9, PrivateKey: testPrivateKey, ClientID: uint64(k + 1),
			PublicAddresses: []netip.AddrPort{sconn.LocalAddr()}, ExpireSeconds: 30, TimeoutSeconds: 5, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Connect(token, now); err != nil {
			t.Fatal(err)
		}
		clients[k] = c
	}
	got := 0 // payloads received, both ways
	handle := func(ev *Event) {
		if ev.Kind == EventPayload {
			if string(ev.Payload) != "from client" {
				t.Fatalf("server got %q", ev.Payload)
			}
			got++
		}
	}
	step := func() {
		now = now.Add(5 * time.Millisecond)
		for _, c := range clients {
			c.Update(now)
		}
		srv.Update(now)
		srv.Poll(handle)
	}
	connected := func() int {
		n := 0
		for _, c := range clients {
			if c.State() == Connected {
				n++
			}
		}
		return n
	}
	for i := 0; i < 2000 && (connected() < numClients || srv.NumConnectedClients() < numClients); i++ {
		step()
	}
	if connected() != numClients || srv.NumConnectedClients() != numClients {
		t.Fatalf("after 10 s: %d clients connected, server has %d", connected(), srv.NumConnectedClients())
	}

	// Three seconds of play at 20 Hz both ways: with 10% loss, about 90%
	// arrives, and nothing arrives that was not sent.
	buf := make([]byte, codec.MaxPayloadBytes)
	sent := 0
	for i := range 600 {
		if i%10 == 0 {
			for _, c := range clients {
				if c.SendPacket([]byte("from client")) == nil {
					sent++
				}
				if srv.SendPacket(c.ClientIndex(), []byte("from server")) == nil {
					sent++
				}
			}
		}
		step()
		for _, c := range clients {
			for n, _, ok := c.ReceivePacket(buf); ok; n, _, ok = c.ReceivePacket(buf) {
				if string(buf[:n]) != "from server" {
					t.Fatalf("client got %q", buf[:n])
				}
				got++
			}
		}
	}
	for range 100 { // let the last ones land
		step()
		for _, c := range clients {
			for _, _, ok := c.ReceivePacket(buf); ok; _, _, ok = c.ReceivePacket(buf) {
				got++
			}
		}
	}
	if ratio := float64(got) / float64(sent); ratio < 0.85 || ratio > 0.95 {
		t.Fatalf("delivered %d of %d payloads (%.3f); the network loses 10%%", got, sent, ratio)
	}
	if connected() != numClients || srv.NumConnectedClients() != numClients {
		t.Fatalf("connections lost to 10%% loss: %d clients, server %d", connected(), srv.NumConnectedClients())
	}

	// Half leave with disconnect packets (their loops keep running, so the
	// simulated network delivers them); half vanish and time out.
	var leaving []*Client
	for k, c := range clients {
		if k%2 == 0 {
			c.Disconnect(now)
			leaving = append(leaving, c)
		}
	}
	for range 2000 { // 10 s: past the 5 s timeout
		now = now.Add(5 * time.Millisecond)
		for _, c := range leaving {
			c.Update(now)
		}
		srv.Update(now)
		srv.Poll(handle)
	}
	if n := srv.NumConnectedClients(); n != 0 {
		t.Fatalf("%d slots still taken", n)
	}
	if n := srv.adm.connected(); n != 0 {
		t.Fatalf("admission state holds %d slots", n)
	}
	if n := srv.shard0().byAddr.len(); n != 0 {
		t.Fatalf("%d addresses still mapped to slots", n)
	}
	if n := srv.shard0().maps.part.n; n != 0 {
		t.Fatalf("%d encryption mappings left", n)
	}
	st := srv.Stats()
	t.Logf("connects %d, timeouts %d, client disconnects %d; server drops %v", st.Connects, st.Timeouts, st.ClientDisconnects, st.CodecDrops)
	if st.Timeouts != numClients/2 || st.ClientDisconnects != numClients/2 {
		t.Fatalf("timeouts %d and disconnects %d, want %d each", st.Timeouts, st.ClientDisconnects, numClients/2)
	}
}

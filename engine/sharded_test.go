package engine

import (
	"encoding/binary"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// TestShardedEndToEnd: 2 shards, 1,000 clients over loopback. Every
// client's payloads reach the application intact and in order, and each
// client stays on the shard that admitted it.
func TestShardedEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 sockets")
	}
	goroutines := runtime.NumGoroutine()
	const numClients, numPayloads = 1000, 10
	srv, err := NewShardedServer(ShardedConfig{
		Server: ServerConfig{ProtocolID: 0x5348, PrivateKey: testPrivateKey, MaxClients: 1024},
		Bind:   []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")},
		Shards: 2,
		Socket: batchio.MmsgConfig{RecvBuffer: 1 << 20, SendBuffer: 1 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.NumShards() != 2 || srv.LocalAddrs()[0] != srv.LocalAddrs()[1] {
		t.Fatalf("shards on %v", srv.LocalAddrs())
	}

	clients := make([]*Client, numClients)
	for k := range clients {
		conn, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.MmsgConfig{RecvBuffer: 64 << 10, SendBuffer: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		c, err := NewClient(ClientConfig{ReceiveQueueSize: 16}, conn)
		if err != nil {
			t.Fatal(err)
		}
		token, err := GenerateConnectToken(TokenParams{ProtocolID: 0x5348, PrivateKey: testPrivateKey,
			ClientID: uint64(k + 1), PublicAddresses: srv.PublicAddresses(), ExpireSeconds: 60, TimeoutSeconds: 10})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Connect(token, time.Now()); err != nil {
			t.Fatal(err)
		}
		clients[k] = c
	}

	shardOf := map[int]int{} // slot -> shard at connect
	idOf := map[int]uint64{} // slot -> client id
	next := map[uint64]int{} // client id -> next payload number expected
	handle := func(ev *Event) {
		switch ev.Kind {
		case EventConnect:
			shardOf[ev.ClientIndex] = srv.ClientShard(ev.ClientIndex)
			idOf[ev.ClientIndex] = ev.ClientID
		case EventDisconnect:
			delete(idOf, ev.ClientIndex)
		case EventPayload:
			id, ok := idOf[ev.ClientIndex]
			if !ok {
				t.Fatalf("payload from slot %d before its connect event", ev.ClientIndex)
			}
			if len(ev.Payload) != 100 || binary.LittleEndian.Uint64(ev.Payload) != id ||
				int(binary.LittleEndian.Uint64(ev.Payload[8:])) != next[id] || ev.Payload[99] != byte(id) {
				t.Fatalf("client %d: payload %x, want number %d", id, ev.Payload[:16], next[id])
			}
			next[id]++
			if s := srv.ClientShard(ev.ClientIndex); s != shardOf[ev.ClientIndex] {
				t.Fatalf("client %d moved from shard %d to %d", id, shardOf[ev.ClientIndex], s)
			}
			// Echo it back through the owning shard.
			if err := srv.SendPacket(ev.ClientIndex, ev.Payload); err != nil {
				t.Fatal(err)
			}
		}
	}
	step := func() {
		now := time.Now()
		for _, c := range clients {
			c.Update(now)
		}
		srv.Poll(handle)
	}
	deadline := time.Now().Add(30 * time.Second)
	allConnected := func() bool { // both sides: the server admits a client before it hears so
		for _, c := range clients {
			if c.State() != Connected {
				return false
			}
		}
		return srv.NumConnectedClients() == numClients
	}
	for !allConnected() && time.Now().Before(deadline) {
		step()
	}
	if n := srv.NumConnectedClients(); n != numClients {
		t.Fatalf("%d of %d clients connected", n, numClients)
	}

	payload := make([]byte, 100)
	echoed := make([]int, numClients)
	buf := make([]byte, codec.MaxPayloadBytes)
	for sent := 0; ; {
		if sent < numPayloads {
			for k, c := range clients {
				if c.State() != Connected {
					continue
				}
				binary.LittleEndian.PutUint64(payload, uint64(k+1))
				binary.LittleEndian.PutUint64(payload[8:], uint64(sent))
				payload[99] = byte(k + 1)
				if err := c.SendPacket(payload); err != nil {
					t.Fatal(err)
				}
			}
			sent++
		}
		step()
		done := true
		for k, c := range clients {
			for {
				n, _, ok := c.ReceivePacket(buf)
				if !ok {
					break
				}
				if binary.LittleEndian.Uint64(buf[:n]) != uint64(k+1) || int(binary.LittleEndian.Uint64(buf[8:])) != echoed[k] {
					t.Fatalf("client %d: echo %x, want number %d", k+1, buf[:16], echoed[k])
				}
				echoed[k]++
			}
			done = done && echoed[k] == numPayloads
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out: server saw %d clients' payloads", len(next))
		}
	}
	perShard := map[int]int{}
	for _, sh := range shardOf {
		perShard[sh]++
	}
	t.Logf("clients per shard: %v; shard stats connected: %d, %d", perShard, srv.Stats()[0].Connected, srv.Stats()[1].Connected)
	for id := uint64(1); id <= numClients; id++ {
		if next[id] != numPayloads {
			t.Fatalf("client %d: %d of %d payloads reached the application", id, next[id], numPayloads)
		}
	}

	for _, c := range clients {
		c.Disconnect(time.Now())
	}
	for srv.NumConnectedClients() > 0 && time.Now().Before(deadline) {
		srv.Poll(handle)
		time.Sleep(time.Millisecond)
	}
	if n := srv.NumConnectedClients(); n != 0 {
		t.Fatalf("%d clients still connected", n)
	}
	srv.Poll(handle)
	if len(idOf) != 0 {
		t.Fatalf("%d connects without a disconnect event", len(idOf))
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200 && runtime.NumGoroutine() > goroutines; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > goroutines {
		t.Fatalf("%d goroutines left, %d before", g, goroutines)
	}
}

// TestShardedAdmissionOnce: two shards that share the admission state and
// receive responses for the same client id, or requests with the same
// token, at the same moment admit at most one. Run with -race.
func TestShardedAdmissionOnce(t *testing.T) {
	for round := range 50 {
		cfg := ServerConfig{MaxClients: 8}
		addrA := netip.MustParseAddrPort("10.0.0.1:40000")
		h := newSrvHarness(t, cfg)
		// A second core on the same slots and admission state, as a shard.
		second := &srvConn{local: addrA}
		cfg2 := h.s.cfg
		s2, err := newServer(cfg2, []batchio.Conn{second}, h.s.slots, h.s.adm)
		if err != nil {
			t.Fatal(err)
		}
		// Same client id, two tokens, two addresses, one per shard.
		p1 := h.peer("192.0.2.1:1000", 99, nil)
		p2 := h.peer("192.0.2.2:1000", 99, nil)
		p1.challenged()
		h.s.Update(h.now)
		s2.processPacket(0, p2.request(), p2.addr, h.now)
		s2.flush()
		var c2 []codec.Packet
		for _, d := range second.out {
			if pkt, err := p2.decode(d.data); err == nil {
				c2 = append(c2, pkt)
			}
		}
		if len(c2) != 1 || c2[0].Type != codec.ConnectionChallenge {
			t.Fatalf("second shard did not challenge: %v", c2)
		}
		p2.challengeSeq = c2[0].ChallengeSequence
		copy(p2.challenge[:], c2[0].ChallengeToken)
		r1, r2 := p1.response(), p2.response()
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); h.deliver(0, p1.addr, r1) }()
		go func() { defer wg.Done(); s2.processPacket(0, r2, p2.addr, h.now); s2.flush() }()
		wg.Wait()
		if got := h.s.NumConnectedClients() + s2.NumConnectedClients(); got != 1 {
			t.Fatalf("round %d: client id 99 admitted %d times", round, got)
		}
		if h.s.adm.connected() != 1 {
			t.Fatalf("round %d: admission counts %d slots", round, h.s.adm.connected())
		}

		// One token from two addresses on two shards at once: at most one
		// is challenged.
		tok := h.srvToken(100, nil)
		q1, q2 := h.peerWithToken("192.0.2.3:1", tok), h.peerWithToken("192.0.2.4:1", tok)
		h.conns[0].out, second.out = nil, nil
		wg.Add(2)
		go func() { defer wg.Done(); h.s.processPacket(0, q1.request(), q1.addr, h.now); h.s.flush() }()
		go func() { defer wg.Done(); s2.processPacket(0, q2.request(), q2.addr, h.now); s2.flush() }()
		wg.Wait()
		challenges := 0
		for _, d := range append(h.conns[0].out, second.out...) {
			for _, q := range []*srvPeer{q1, q2} {
				if pkt, err := q.decode(d.data); err == nil && d.addr == q.addr && pkt.Type == codec.ConnectionChallenge {
					challenges++
				}
			}
		}
		if challenges != 1 {
			t.Fatalf("round %d: a token used from two addresses at once got %d challenges", round, challenges)
		}
	}
}

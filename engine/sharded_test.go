package engine

import (
	"encoding/binary"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/netcode-go/netcode/aead"
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
		Socket: batchio.Config{RecvBuffer: 1 << 20, SendBuffer: 1 << 20},
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
		conn, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{RecvBuffer: 64 << 10, SendBuffer: 64 << 10})
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

// udpPeer speaks the handshake over a real socket with a token's keys.
type udpPeer struct {
	conn      batchio.Conn
	ct        codec.ConnectToken
	seal      *aead.PacketKey
	open      *aead.PacketKey
	seq       uint64
	msgs      []batchio.Message
	challenge codec.Packet
	chalBuf   [codec.ChallengeTokenBytes]byte
}

func newUDPPeer(t *testing.T, token []byte) *udpPeer {
	p := &udpPeer{conn: listenOrSkip(t, "127.0.0.1:0"), msgs: batchio.NewMessages(8, codec.MaxPacketBytes)}
	t.Cleanup(func() { p.conn.Close() })
	if err := codec.ReadConnectToken(token, &p.ct); err != nil {
		t.Fatal(err)
	}
	p.seal, _ = aead.NewPacketKey(p.ct.ClientToServerKey[:], p.ct.ProtocolID)
	p.open, _ = aead.NewPacketKey(p.ct.ServerToClientKey[:], p.ct.ProtocolID)
	return p
}

func (p *udpPeer) send(to netip.AddrPort, pkt []byte) {
	p.conn.WriteBatch([]batchio.Message{{Buf: pkt, N: len(pkt), Addr: to}})
}

func (p *udpPeer) request(to netip.AddrPort) {
	buf := make([]byte, codec.RequestPacketBytes)
	codec.WriteRequestPacket(buf, p.ct.ProtocolID, p.ct.ExpireTimestamp, p.ct.Nonce[:], p.ct.PrivateData[:])
	p.send(to, buf)
}

func (p *udpPeer) encrypted(to netip.AddrPort, write func([]byte, uint64) (int, error)) {
	buf := make([]byte, codec.MaxPacketBytes)
	n, _ := write(buf, p.seq)
	p.seq++
	p.send(to, buf[:n])
}

// awaitChallenge waits up to d for a challenge and keeps it.
func (p *udpPeer) awaitChallenge(d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		p.conn.WaitRead(time.Now().Add(10 * time.Millisecond))
		n, _ := p.conn.ReadBatch(p.msgs)
		for i := range n {
			rp := codec.ReadParams{Role: codec.RoleClient, ProtocolID: p.ct.ProtocolID, Key: p.open}
			var pkt codec.Packet
			if codec.ReadPacket(p.msgs[i].Buf[:p.msgs[i].N], &rp, &pkt) == nil && pkt.Type == codec.ConnectionChallenge {
				p.challenge = pkt
				copy(p.chalBuf[:], pkt.ChallengeToken)
				return true
			}
		}
	}
	return false
}

// TestShardedTokenOnce: one token presented at the same moment from many
// addresses, which the kernel spreads over two shards, gets one challenge
// and one session; once that session ended, the token is refused from
// every address, on every shard. Run with -race.
func TestShardedTokenOnce(t *testing.T) {
	srv, err := NewShardedServer(ShardedConfig{
		Server: ServerConfig{ProtocolID: 0x5a, PrivateKey: testPrivateKey, MaxClients: 8},
		Bind:   []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")},
		Shards: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	addr := srv.PublicAddresses()[0]
	token, err := GenerateConnectToken(TokenParams{ProtocolID: 0x5a, PrivateKey: testPrivateKey, ClientID: 7,
		PublicAddresses: []netip.AddrPort{addr}, ExpireSeconds: 30, TimeoutSeconds: 5})
	if err != nil {
		t.Fatal(err)
	}
	peers := make([]*udpPeer, 32)
	for i := range peers {
		peers[i] = newUDPPeer(t, token)
	}
	// Every peer presents the token at once and answers a challenge if it
	// gets one.
	present := func() (challenged []int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, p := range peers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3 { // like a client's retries
					p.request(addr)
					if p.awaitChallenge(150 * time.Millisecond) {
						p.encrypted(addr, func(b []byte, seq uint64) (int, error) {
							return codec.WriteResponsePacket(b, seq, p.challenge.ChallengeSequence, p.chalBuf[:], p.seal)
						})
						mu.Lock()
						challenged = append(challenged, i)
						mu.Unlock()
						return
					}
				}
			}()
		}
		wg.Wait()
		return challenged
	}
	var connects, disconnects int
	poll := func(d time.Duration, until func() bool) {
		for deadline := time.Now().Add(d); time.Now().Before(deadline) && !until(); {
			srv.Poll(func(ev *Event) {
				switch ev.Kind {
				case EventConnect:
					connects++
				case EventDisconnect:
					disconnects++
				}
			})
			srv.WaitEvents(time.Now().Add(10 * time.Millisecond))
		}
	}
	won := present()
	poll(2*time.Second, func() bool { return connects > 0 })
	poll(100*time.Millisecond, func() bool { return false })
	if len(won) != 1 || connects != 1 {
		t.Fatalf("one token from %d addresses: %d challenged, %d connected; want 1 and 1", len(peers), len(won), connects)
	}
	shardsSeen := 0
	for _, st := range srv.Stats() {
		if st.PacketsIn > 0 {
			shardsSeen++
		}
	}
	if shardsSeen != 2 {
		t.Fatalf("the requests reached %d shards; the test needs both", shardsSeen)
	}
	// The session ends; the token is consumed for everyone.
	w := peers[won[0]]
	w.encrypted(addr, func(b []byte, seq uint64) (int, error) { return codec.WriteDisconnectPacket(b, seq, w.seal) })
	poll(2*time.Second, func() bool { return disconnects > 0 })
	if disconnects != 1 {
		t.Fatal("the session did not end")
	}
	if again := present(); len(again) != 0 {
		t.Fatalf("consumed token challenged again from %d addresses", len(again))
	}
	poll(100*time.Millisecond, func() bool { return false })
	var consumed uint64
	for _, st := range srv.Stats() {
		consumed += st.Drops[ServerDropTokenConsumed]
	}
	if connects != 1 || consumed < uint64(len(peers)) {
		t.Fatalf("after the session: %d connects, %d consumed-token drops (want 1 and >= %d)", connects, consumed, len(peers))
	}
}

// TestShardedConsumeOnce: when one address reaches two shards (the kernel's
// hash changes with the socket set) and both hold a handshake for its
// token, the response on the second shard is refused once the first has
// consumed the token, even after that session ended and freed its client
// id.
func TestShardedConsumeOnce(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{MaxClients: 8})
	second := &srvConn{local: srvAddr}
	s2, err := newServer(h.s.cfg, []batchio.Conn{second}, h.s.slots, h.s.adm)
	if err != nil {
		t.Fatal(err)
	}
	s2.Update(h.now)
	p := h.peer("192.0.2.1:1000", 5, nil)
	p.challenged() // pending for p's address, a mapping on the first shard
	s2.processPacket(0, p.request(), p.addr, h.now)
	s2.flush()
	if s2.maps.part.n != 1 {
		t.Fatal("the second shard has no handshake for the retried request")
	}
	chal2 := second.out[0].data
	srvExpectTypes(t, "first shard", p.send(p.response()), codec.ConnectionKeepAlive)
	p.send(p.disconnect())
	if h.s.adm.connected() != 0 {
		t.Fatal("session did not end")
	}
	pkt, err := p.decode(chal2)
	if err != nil {
		t.Fatal(err)
	}
	p.challengeSeq = pkt.ChallengeSequence
	s2.processPacket(0, p.response(), p.addr, h.now)
	if s2.NumConnectedClients() != 0 || s2.stats.Drops[ServerDropTokenConsumed] != 1 {
		t.Fatalf("second shard admitted the consumed token: %d connected", s2.NumConnectedClients())
	}
}

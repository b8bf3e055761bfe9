package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/reliable"
)

// relPayload is the test's packet k of a direction: its length and bytes
// follow from (dir, client, k), so a receiver can check it byte for byte.
func relPayload(dst []byte, dir, client, k int) []byte {
	n := 100
	if k%4 == 3 {
		n = 4000 // four fragments
	}
	if k%16 == 15 {
		n = 16384 // the most a packet holds, 16 fragments
	}
	p := dst[:n]
	x := uint32(dir*7919 + client*104729 + k*2654435761)
	for i := range p {
		x = x*1664525 + 1013904223
		p[i] = byte(x >> 24)
	}
	// The first 4 bytes say which packet it is.
	p[0], p[1], p[2], p[3] = byte(dir), byte(client), byte(k), byte(k>>8)
	return p
}

func checkRelPayload(t *testing.T, buf, got []byte, dir, client, k int) {
	t.Helper()
	if want := relPayload(buf, dir, client, k); string(want) != string(got) {
		t.Fatalf("dir %d client %d packet %d: %d bytes differ from the %d sent", dir, client, k, len(got), len(want))
	}
}

// relSide is what one direction of one connection saw.
type relSide struct {
	sent      map[uint16]int  // sequence -> packet number
	delivered map[uint16]bool // sequences delivered (by the receiver)
	acked     map[uint16]bool // sequences the sender was told were acked
}

func newRelSide() *relSide {
	return &relSide{sent: map[uint16]int{}, delivered: map[uint16]bool{}, acked: map[uint16]bool{}}
}

// TestReliableEndToEndSimulated: clients and a server with reliable
// endpoints over a network with 10% loss, 50 ms latency each way, 5 ms
// jitter, stepped every millisecond (which reorders) and 2% duplicates, on a fake clock, sending 100 B,
// 4,000 B and 16 KiB packets both ways. Every packet delivered is
// byte-exact and delivered once; every ack names a packet that was
// delivered; most delivered packets are acked; the RTT estimate is within
// 10% of the configured 100 ms round trip.
func TestReliableEndToEndSimulated(t *testing.T) {
	const numClients = 4
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	network, err := batchiotest.NewMemNetwork(batchiotest.MemConfig{InboxSize: 1 << 14})
	if err != nil {
		t.Fatal(err)
	}
	sim := func(seed uint64, addr string) *batchiotest.SimConn {
		c, err := network.Listen(netip.MustParseAddrPort(addr))
		if err != nil {
			t.Fatal(err)
		}
		s, err := batchiotest.NewSimConn(c, batchiotest.SimConfig{Latency: 50 * time.Millisecond, Jitter: 5 * time.Millisecond,
			Loss: 0.1, Duplicate: 0.02, Seed: seed, MaxQueued: 1 << 16}, clock)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rcfg := DefaultReliableConfig()
	sconn := sim(1, "10.0.0.1:40000")
	now = now.Add(-srvStartGrace) // the server starts before the tokens are minted
	srv, err := NewServer(ServerConfig{ProtocolID: 9, PrivateKey: testPrivateKey, MaxClients: numClients, Manual: true,
		Clock: clock, Reliable: &rcfg, EventQueueSize: 1 << 12}, sconn)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	now = now.Add(srvStartGrace)
	clients := make([]*Client, numClients)
	for k := range clients {
		c, err := NewClient(ClientConfig{Reliable: &rcfg, ReceiveQueueSize: 1 << 10}, sim(uint64(100+k), fmt.Sprintf("10.1.0.%d:5000", k+1)))
		if err != nil {
			t.Fatal(err)
		}
		relConnect(t, c, sconn.LocalAddr(), uint64(k+1), 5, now)
		clients[k] = c
	}
	up := make([]*relSide, numClients)   // client -> server
	down := make([]*relSide, numClients) // server -> client
	for k := range up {
		up[k], down[k] = newRelSide(), newRelSide()
	}
	bySlot := map[int]int{} // server slot -> client number
	buf := make([]byte, rcfg.MaxPacketSize)
	check := make([]byte, rcfg.MaxPacketSize)
	handle := func(ev *Event) {
		k, ok := bySlot[ev.ClientIndex]
		switch {
		case ev.Kind == EventConnect:
			bySlot[ev.ClientIndex] = int(ev.ClientID) - 1
		case !ok:
			t.Fatalf("event %v for unknown slot %d", ev.Kind, ev.ClientIndex)
		case ev.Kind == EventPayload:
			seq := uint16(ev.Sequence)
			n, sent := up[k].sent[seq]
			if !sent {
				t.Fatalf("server got sequence %d from client %d, never sent", seq, k)
			}
			if up[k].delivered[seq] {
				t.Fatalf("server got sequence %d from client %d twice", seq, k)
			}
			up[k].delivered[seq] = true
			checkRelPayload(t, check, ev.Payload, 0, k, n)
		case ev.Kind == EventAcks:
			for _, a := range ev.Acks {
				down[k].acked[a] = true
			}
		}
	}
	var acks []uint16
	step := func() {
		now = now.Add(time.Millisecond)
		for k, c := range clients {
			c.Update(now)
			for n, seq, ok := c.ReceivePacket(buf); ok; n, seq, ok = c.ReceivePacket(buf) {
				s := uint16(seq)
				p, sent := down[k].sent[s]
				if !sent || down[k].delivered[s] {
					t.Fatalf("client %d got sequence %d (sent %v, delivered before %v)", k, s, sent, down[k].delivered[s])
				}
				down[k].delivered[s] = true
				checkRelPayload(t, check, buf[:n], 1, k, p)
			}
			acks, _ = c.ReadAcks(acks[:0])
			for _, a := range acks {
				up[k].acked[a] = true
			}
		}
		srv.Update(now)
		srv.Poll(handle)
	}
	allConnected := func() bool {
		for _, c := range clients {
			if c.State() != Connected {
				return false
			}
		}
		return srv.NumConnectedClients() == numClients
	}
	for i := 0; i < 2000 && !allConnected(); i++ {
		step()
	}
	for _, c := range clients {
		if c.State() != Connected {
			t.Fatalf("client state %v after 2 s", c.State())
		}
	}
	slotOf := make([]int, numClients)
	for slot, k := range bySlot {
		slotOf[k] = slot
	}
	const packets = 2000 // per direction and client, one a millisecond
	for p := range packets {
		for k, c := range clients {
			seq, _ := c.NextSequence()
			if err := c.SendPacket(relPayload(buf, 0, k, p)); err != nil {
				t.Fatal(err)
			}
			up[k].sent[seq] = p
			seq, err := srv.NextSequence(slotOf[k])
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.SendPacket(slotOf[k], relPayload(buf, 1, k, p)); err != nil {
				t.Fatal(err)
			}
			down[k].sent[seq] = p
		}
		step()
	}
	for range 200 {
		step()
	}
	for k := range clients {
		for dir, side := range []*relSide{up[k], down[k]} {
			for a := range side.acked {
				if !side.delivered[a] {
					t.Fatalf("client %d dir %d: sequence %d acked but never delivered", k, dir, a)
				}
			}
			d, a := len(side.delivered), len(side.acked)
			// Loss is per datagram: 100 B packets arrive ~90%, 4,000 B
			// ones ~66%, 16 KiB ones ~19%, resends none: ~70% over all.
			if d < packets*6/10 || d > packets*85/100 {
				t.Errorf("client %d dir %d: %d of %d packets delivered", k, dir, d, packets)
			}
			// The last packets' acks are still in flight; ack bits cover
			// a packet whose ack packet was lost.
			if a < d*95/100 {
				t.Errorf("client %d dir %d: %d of %d delivered packets acked", k, dir, a, d)
			}
		}
		cs, err := clients[k].ReliableStats()
		if err != nil {
			t.Fatal(err)
		}
		ss, err := srv.ReliableStats(slotOf[k])
		if err != nil {
			t.Fatal(err)
		}
		for who, st := range map[string]ReliableStats{"client": cs, "server": ss} {
			if st.RTT < 90 || st.RTT > 110 {
				t.Errorf("client %d: %s's RTT estimate %.1f ms; want within 10%% of 100", k, who, st.RTT)
			}
			if st.PacketLoss < 5 || st.PacketLoss > 60 {
				t.Errorf("client %d: %s's loss estimate %.1f%%", k, who, st.PacketLoss)
			}
		}
		t.Logf("client %d: delivered up %d down %d; RTT client %.1f ms server %.1f ms, loss %.1f%% / %.1f%%",
			k, len(up[k].delivered), len(down[k].delivered), cs.RTT, ss.RTT, cs.PacketLoss, ss.PacketLoss)
	}
	// Duplicated datagrams never reach the endpoints: netcode's replay
	// protection drops them first.
	st := srv.Stats()
	if st.CodecDrops[codec.ReasonReplayed] == 0 {
		t.Error("no duplicate was dropped as a replay")
	}
	for r, n := range st.ReliableDrops {
		if n != 0 {
			t.Logf("server reliable drops: %v %d", reliable.DropReason(r), n)
		}
	}
	// At its share of the pool a client's endpoint gives up its oldest
	// packet (one that lost a fragment) for a newer one, so an honest
	// client is never refused for want of buffers.
	if n := st.ReliableDrops[reliable.DropReassemblyPoolExhausted]; n != 0 {
		t.Errorf("%d fragments refused for want of reassembly buffers", n)
	}
}

func TestReliableConfigErrors(t *testing.T) {
	big := DefaultReliableConfig()
	big.FragmentSize, big.FragmentAbove = 1200, 1200
	bad := DefaultReliableConfig()
	bad.MaxFragments = 0
	for _, tc := range []struct {
		name string
		cfg  ServerConfig
		want string
	}{
		{"datagram too long", ServerConfig{Reliable: &big}, "netcode payload limit"},
		{"invalid reliable", ServerConfig{Reliable: &bad}, "MaxFragments"},
		{"pool without reliable", ServerConfig{ReliablePoolBuffers: 8}, "Reliable is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.PrivateKey, cfg.Manual = testPrivateKey, true
			_, err := NewServer(cfg, batchiotest.NewConn(netip.MustParseAddrPort("127.0.0.1:40000")))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one naming %q", err, tc.want)
			}
		})
	}
	if _, err := NewClient(ClientConfig{Reliable: &big}); !errors.Is(err, ErrClientConfig) {
		t.Fatalf("client with 1,200-byte fragments: %v", err)
	}
	srv, err := NewServer(ServerConfig{PrivateKey: testPrivateKey, Manual: true, PublicAddresses: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1")}},
		batchiotest.NewConn(netip.MustParseAddrPort("127.0.0.1:40000")))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := srv.NextSequence(0); !errors.Is(err, ErrReliableOff) {
		t.Fatalf("NextSequence without endpoints: %v", err)
	}
	if err := srv.SendPacket(0, make([]byte, codec.MaxPayloadBytes+1)); !errors.Is(err, codec.ErrPayloadSize) {
		t.Fatalf("1,201 bytes without endpoints: %v", err)
	}
}

// relConnect connects c to the server at addr with a fresh token for
// client id, minted at now.
func relConnect(t *testing.T, c *Client, addr netip.AddrPort, id uint64, timeout int32, now time.Time) {
	t.Helper()
	token, err := GenerateConnectToken(TokenParams{ProtocolID: 9, PrivateKey: testPrivateKey, ClientID: id,
		PublicAddresses: []netip.AddrPort{addr}, ExpireSeconds: 30, TimeoutSeconds: timeout, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(token, now); err != nil {
		t.Fatal(err)
	}
}

// relPair returns a manual-mode server and a client, both with reliable
// endpoints, connected over the in-memory network on a fake clock, and a
// step function that advances the clock and updates both.
func relPair(t *testing.T) (*Server, *Client, func()) {
	t.Helper()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	network, err := batchiotest.NewMemNetwork(batchiotest.MemConfig{InboxSize: 1 << 12})
	if err != nil {
		t.Fatal(err)
	}
	sconn, _ := network.Listen(netip.MustParseAddrPort("10.0.0.1:40000"))
	cconn, _ := network.Listen(netip.MustParseAddrPort("10.1.0.1:5000"))
	rcfg := DefaultReliableConfig()
	now = now.Add(-srvStartGrace) // the server starts before the tokens are minted
	srv, err := NewServer(ServerConfig{ProtocolID: 9, PrivateKey: testPrivateKey, MaxClients: 4, Manual: true,
		Clock: clock, Reliable: &rcfg}, sconn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	now = now.Add(srvStartGrace)
	c, err := NewClient(ClientConfig{Reliable: &rcfg}, cconn)
	if err != nil {
		t.Fatal(err)
	}
	relConnect(t, c, sconn.LocalAddr(), 1, 10, now)
	step := func() {
		now = now.Add(time.Millisecond)
		c.Update(now)
		srv.Update(now)
	}
	for i := 0; i < 100 && (c.State() != Connected || srv.NumConnectedClients() != 1); i++ {
		step()
		srv.Poll(func(*Event) {})
	}
	if c.State() != Connected {
		t.Fatalf("client %v", c.State())
	}
	return srv, c, step
}

// Steady state: sending and receiving 100 B and 4,000 B reliable packets
// both ways, with acks and estimates read, allocates nothing on either side.
func TestReliableAllocs(t *testing.T) {
	srv, c, step := relPair(t)
	small, large := make([]byte, 100), make([]byte, 4000)
	buf := make([]byte, DefaultReliableConfig().MaxPacketSize)
	acks := make([]uint16, 0, 256)
	got, acked := 0, 0
	handle := func(ev *Event) {
		switch ev.Kind {
		case EventPayload:
			got++
		case EventAcks:
			acked += len(ev.Acks)
		}
	}
	round := func() {
		for _, p := range [][]byte{small, large} {
			if err := c.SendPacket(p); err != nil {
				t.Fatal(err)
			}
			if err := srv.SendPacket(0, p); err != nil {
				t.Fatal(err)
			}
		}
		step()
		srv.Poll(handle)
		for _, _, ok := c.ReceivePacket(buf); ok; _, _, ok = c.ReceivePacket(buf) {
			got++
		}
		acks, _ = c.ReadAcks(acks[:0])
		acked += len(acks)
		if _, err := srv.ReliableStats(0); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ReliableStats(); err != nil {
			t.Fatal(err)
		}
	}
	for range 300 { // past the windows' first wrap and the estimates' first updates
		round()
	}
	got, acked = 0, 0
	allocs := testing.AllocsPerRun(500, round)
	if allocs != 0 {
		t.Fatalf("a round of reliable sends and receives allocates %v times", allocs)
	}
	// 501 rounds of 2 packets each way were all delivered and, but for
	// the last round's, acked.
	if got != 4*501 || acked < 4*500 {
		t.Fatalf("%d packets delivered, %d acked; want %d and at least %d", got, acked, 4*501, 4*500)
	}
}

// The default mode's path (application -> outbox records -> shard ->
// endpoint, and back through the inbox) allocates nothing either: a
// 4,000-byte packet crosses each ring as a record of four entries.
func TestReliableAllocsDefaultMode(t *testing.T) {
	network, err := batchiotest.NewMemNetwork(batchiotest.MemConfig{InboxSize: 1 << 12})
	if err != nil {
		t.Fatal(err)
	}
	sconn, _ := network.Listen(netip.MustParseAddrPort("10.0.0.1:40000"))
	cconn, _ := network.Listen(netip.MustParseAddrPort("10.1.0.1:5000"))
	rcfg := DefaultReliableConfig()
	srv, err := NewServer(ServerConfig{ProtocolID: 9, PrivateKey: testPrivateKey, MaxClients: 4, Reliable: &rcfg}, sconn)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := NewClient(ClientConfig{Reliable: &rcfg}, cconn)
	if err != nil {
		t.Fatal(err)
	}
	relConnect(t, c, sconn.LocalAddr(), 1, 10, time.Now())
	slot := -1
	echoed := 0
	var echoErr error
	handle := func(ev *Event) {
		switch ev.Kind {
		case EventConnect:
			slot = ev.ClientIndex
		case EventPayload: // echo it
			if err := srv.SendPacket(ev.ClientIndex, ev.Payload); err != nil && echoErr == nil {
				echoErr = err
			}
			echoed++
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for (c.State() != Connected || slot < 0) && time.Now().Before(deadline) {
		c.Update(time.Now())
		srv.Poll(handle)
		c.Wait(time.Now().Add(time.Millisecond))
	}
	if c.State() != Connected || slot < 0 {
		t.Fatalf("not connected: client %v, slot %d", c.State(), slot)
	}
	large := make([]byte, 4000)
	buf := make([]byte, rcfg.MaxPacketSize)
	round := func() {
		if err := c.SendPacket(large); err != nil {
			t.Fatal(err)
		}
		c.Flush()
		for got := false; !got && time.Now().Before(deadline); {
			srv.Poll(handle)
			c.Update(time.Now())
			if n, _, ok := c.ReceivePacket(buf); ok {
				if n != len(large) {
					t.Fatalf("echo of %d bytes", n)
				}
				got = true
			}
		}
	}
	for range 50 {
		round()
	}
	allocs := testing.AllocsPerRun(100, round)
	if echoErr != nil {
		t.Fatal(echoErr)
	}
	if allocs != 0 {
		t.Fatalf("a 4,000-byte reliable echo in the default mode allocates %v times", allocs)
	}
	if time.Now().After(deadline) {
		t.Fatal("echoes stopped before the end")
	}
}

// heapAfter returns the live heap after a collection.
func heapAfter() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// With the default reliable config, a server of 16,384 slots (two shards,
// their reassembly pools included) fits in 1 GiB; the test logs the cost
// per slot with and without endpoints for the README's bounds table.
func TestReliableMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few hundred MiB")
	}
	const slots = 16384
	measure := func(rcfg *reliable.Config) uint64 {
		before := heapAfter()
		srv, err := NewServer(ServerConfig{PrivateKey: testPrivateKey, Manual: true, MaxClients: slots, Reliable: rcfg,
			PublicAddresses: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1")}},
			batchiotest.NewConn(netip.MustParseAddrPort("127.0.0.1:40000")), batchiotest.NewConn(netip.MustParseAddrPort("127.0.0.1:40001")))
		if err != nil {
			t.Fatal(err)
		}
		used := heapAfter() - before
		runtime.KeepAlive(srv)
		srv.Close()
		return used
	}
	rcfg := DefaultReliableConfig()
	off, on := measure(nil), measure(&rcfg)
	t.Logf("%d slots: %d MiB without endpoints, %d MiB with (%d bytes per slot more, pools included)",
		slots, off>>20, on>>20, (on-off)/slots)
	if on > 1<<30 {
		t.Fatalf("%d slots with reliable endpoints take %d MiB; want at most 1 GiB", slots, on>>20)
	}
}

// A game that never reads its acks loses only the oldest unread ones: the
// endpoint keeps recording acks and RTT samples (a full endpoint ack list
// would stop both, as in the C library).
func TestReliableClientUnreadAcks(t *testing.T) {
	srv, c, step := relPair(t)
	payload := make([]byte, 100)
	const rounds = 600
	for range rounds {
		if err := c.SendPacket(payload); err != nil {
			t.Fatal(err)
		}
		if err := srv.SendPacket(0, payload); err != nil {
			t.Fatal(err)
		}
		step()
		srv.Poll(func(*Event) {})
		for _, _, ok := c.ReceivePacket(make([]byte, 2000)); ok; _, _, ok = c.ReceivePacket(make([]byte, 2000)) {
		}
	}
	st, err := c.ReliableStats()
	if err != nil {
		t.Fatal(err)
	}
	if st.PacketsAcked < rounds-2 {
		t.Fatalf("%d of %d packets acked while the game read no acks; want all but the last", st.PacketsAcked, rounds)
	}
	acks, _ := c.ReadAcks(nil)
	size := DefaultReliableConfig().AckBufferSize
	if len(acks) != size || c.Stats().AcksOverwritten != st.PacketsAcked-uint64(size) {
		t.Fatalf("ReadAcks gave %d, %d overwritten; want the newest %d and %d overwritten", len(acks), c.Stats().AcksOverwritten, size, st.PacketsAcked-uint64(size))
	}
	for k := 1; k < len(acks); k++ {
		if acks[k] != acks[k-1]+1 {
			t.Fatalf("acks %d and %d: %d then %d; want consecutive, oldest first", k-1, k, acks[k-1], acks[k])
		}
	}
	if more, _ := c.ReadAcks(nil); len(more) != 0 {
		t.Fatalf("a second ReadAcks gave %d acks", len(more))
	}
}

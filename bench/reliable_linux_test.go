//go:build linux

package bench

import (
	"fmt"
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/reliable"
)

// TestReliableEcho runs a reliable echo load on loopback for a second:
// payloads of one datagram and of four fragments come back whole, both
// sides estimate an RTT, the server acks the load's packets (more of them
// than an endpoint holds unread acks), and a 4,000-byte packet takes four
// datagrams.
func TestReliableEcho(t *testing.T) {
	for _, tc := range []struct {
		size  int
		frags float64
	}{{100, 1}, {4000, 4}} {
		t.Run(fmt.Sprint(tc.size), func(t *testing.T) {
			t.Parallel()
			testReliableEcho(t, tc.size, tc.frags)
		})
	}
}

func testReliableEcho(t *testing.T, size int, frags float64) {
	const clients, rate, d = 4, 50, time.Second
	key := testKey(t)
	rc := engine.DefaultReliableConfig()
	// Fewer than the packets per client: an endpoint whose acks nobody
	// reads takes no more than this many.
	rc.AckBufferSize = 16
	const ackCap = clients * 16
	srv, err := engine.Listen(engine.ServerConfig{ProtocolID: testProtocolID, PrivateKey: key, MaxClients: clients, Shards: 1,
		Reliable: &rc}, batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	echo := NewEchoServer(srv, EchoConfig{})
	done := make(chan error, 1)
	go func() { done <- echo.Run() }()
	t.Cleanup(func() {
		echo.Stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	// SampleEvery must give way: acks need every reply opened.
	load, err := NewLoad(LoadConfig{Server: srv.LocalAddrs()[0], PrivateKey: key, ProtocolID: testProtocolID, Clients: clients,
		PayloadBytes: size, Reliable: &rc, SampleEvery: 8, Sockets: SocketsShared})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { load.Close() })
	if load.SampleEvery() != 1 {
		t.Errorf("SampleEvery %d with reliable endpoints; want 1", load.SampleEvery())
	}
	load.Start()
	if n := load.WaitConnected(10*time.Second, nil); n != clients {
		t.Fatalf("%d of %d clients connected", n, clients)
	}

	var b, sb, se, e, sv0, sv1 ReliableMark
	load.ReliableMark(&b)
	sv0.ReadServer(srv)
	start := time.Now().Add(150 * time.Millisecond)
	load.BeginWindow(rate, start, d)
	time.Sleep(time.Until(start))
	load.ReliableMark(&sb)
	// After the last send, before a keep-alive (100 ms after it).
	time.Sleep(time.Until(start.Add(d + 40*time.Millisecond)))
	load.ReliableMark(&se)
	time.Sleep(400 * time.Millisecond) // echoes and acks in flight; estimates updated
	load.ReliableMark(&e)
	sv1.ReadServer(srv)
	tot := load.Totals()

	if tot.Sent <= ackCap || tot.Received == 0 || tot.Bad != 0 || tot.Duplicates != 0 {
		t.Errorf("sent %d received %d bad %d dups %d; want more than %d sent and echoes back", tot.Sent, tot.Received, tot.Bad, tot.Duplicates, ackCap)
	}
	if tot.Lost() != 0 {
		t.Logf("lost %d of %d (a busy machine's socket buffers)", tot.Lost(), tot.Sent)
	}
	if got := tot.Hist.TotalCount(); got != int64(tot.Received) {
		t.Errorf("histogram holds %d values; want one per echo (%d)", got, tot.Received)
	}
	f := WindowFigures(&b, &sb, &se, &e)
	t.Logf("load: %v; echo p50 %.0f µs", f, PercentilesOf(tot.Hist).P50)
	if f.Endpoints != clients || f.RTTMs <= 0 {
		t.Errorf("%d endpoints with an RTT estimate, median %g ms; want %d, more than 0", f.Endpoints, f.RTTMs, clients)
	}
	// A header acks the latest 33 packets its sender received, so a
	// server that stalls with a longer backlog leaves some unacked.
	if f.Sent != tot.Sent || f.Acked <= ackCap || !(f.AckRatio > 0 && f.AckRatio <= 1) {
		t.Errorf("endpoints sent %d (load %d), %d acked, ratio %g; want the load's count, more than %d acked, a ratio in (0, 1]",
			f.Sent, tot.Sent, f.Acked, f.AckRatio, ackCap)
	}
	// Exact on a quiet machine; a client that a busy one stalls for 100
	// ms sends a keep-alive besides.
	if x := f.DatagramsPerPacket; x < frags-0.01 || math.Round(x) != frags {
		t.Errorf("%.3f datagrams per %d-byte packet; want %g", f.DatagramsPerPacket, size, frags)
	}
	s := WindowFigures(&sv0, &sv0, &sv1, &sv1)
	t.Logf("server: %v", s)
	if s.RTTMs <= 0 || s.Sent == 0 || !(s.AckRatio > 0 && s.AckRatio <= 1) {
		t.Errorf("server: %v; want an RTT estimate, and echoes sent and acked", s)
	}
}

// TestReliableSizes: payloads and snapshots above 1,200 bytes need
// reliable endpoints, which take up to their MaxPacketSize.
func TestReliableSizes(t *testing.T) {
	rc := engine.DefaultReliableConfig()
	addr := netip.MustParseAddrPort("127.0.0.1:40000")
	for _, tc := range []struct {
		mode          LoadMode
		payload, snap int
		rel           *reliable.Config
		bare, ok      bool
	}{
		{LoadEcho, 1200, 0, nil, false, true},
		{LoadEcho, 1201, 0, nil, false, false},
		{LoadEcho, 4000, 0, &rc, false, true},
		{LoadEcho, rc.MaxPacketSize + 1, 0, &rc, false, false},
		{LoadGame, 64, 4000, nil, false, false},
		{LoadGame, 64, 4000, &rc, false, true},
		{LoadEcho, 100, 0, &rc, true, false},
		{LoadHandshake, 0, 0, &rc, false, false},
	} {
		c := LoadConfig{Server: addr, Clients: 1, Mode: tc.mode, PayloadBytes: tc.payload, SnapshotBytes: tc.snap, TickHz: 60,
			Reliable: tc.rel, Bare: tc.bare}
		if err := c.normalize(); (err == nil) != tc.ok {
			t.Errorf("mode %d payload %d snapshot %d reliable %v bare %v: err %v; want ok %v",
				tc.mode, tc.payload, tc.snap, tc.rel != nil, tc.bare, err, tc.ok)
		}
	}
}

// TestReliableGame runs a reliable game load with snapshots of four
// fragments: they arrive whole, stamped at their start, and each takes
// four datagrams.
func TestReliableGame(t *testing.T) {
	const clients, size, d = 16, 4000, time.Second
	key := testKey(t)
	rc := engine.DefaultReliableConfig()
	q := GameQueueSize(clients, size)
	srv, err := engine.Listen(engine.ServerConfig{ProtocolID: testProtocolID, PrivateKey: key, MaxClients: clients, Shards: 1,
		EventQueueSize: q, SendQueueSize: q, Reliable: &rc}, batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGameServer(srv, GameConfig{TickHz: testTickHz, SnapshotBytes: size, Reliable: &rc})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Run() }()
	t.Cleanup(func() {
		g.Stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	load, err := NewLoad(LoadConfig{Server: srv.LocalAddrs()[0], PrivateKey: key, ProtocolID: testProtocolID, Clients: clients,
		Mode: LoadGame, PayloadBytes: 64, SnapshotBytes: size, TickHz: testTickHz, Reliable: &rc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { load.Close() })
	load.Start()
	if n := load.WaitConnected(10*time.Second, nil); n != clients {
		t.Fatalf("%d of %d clients connected", n, clients)
	}
	sent := func() ReliableMark {
		c := g.Counters()
		return ReliableMark{Sent: c.Snapshots, Datagrams: c.PacketsOut}
	}
	start := time.Now().Add(150 * time.Millisecond)
	load.BeginWindow(testTickHz, start, d)
	time.Sleep(time.Until(start))
	sb := sent()
	time.Sleep(d)
	se := sent()
	time.Sleep(500 * time.Millisecond)
	tot := load.Totals()
	if tot.Ticks == 0 || tot.Received == 0 || tot.Bad != 0 || tot.Duplicates != 0 {
		t.Errorf("%d ticks, owed %d snapshots, received %d, bad %d, dups %d; want whole snapshots", tot.Ticks, tot.Sent, tot.Received, tot.Bad, tot.Duplicates)
	}
	if tot.Lost() != 0 {
		t.Logf("lost %d of %d (a busy machine's socket buffers)", tot.Lost(), tot.Sent)
	}
	f := WindowFigures(&sb, &sb, &se, &se)
	t.Logf("server: %d snapshots, %.3f datagrams each", f.Sent, f.DatagramsPerPacket)
	// The two counters are read a moment apart: a tick's snapshots may be
	// counted before the shard has sent them.
	if math.Round(f.DatagramsPerPacket) != 4 {
		t.Errorf("%.3f datagrams per %d-byte snapshot; want 4", f.DatagramsPerPacket, size)
	}
}

package engine

import (
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestSlotMemory asserts that the memory a server needs per client slot
// stays within 4 KiB: packet buffers and rings belong to the shards, not to
// the slots. It measures the slope between default-mode servers of 2 shards
// (on the memory network) with 4,096 and 16,384 slots, so per-shard memory
// cancels out.
func TestSlotMemory(t *testing.T) {
	heapFor := func(slots int) uint64 {
		nw, err := batchiotest.NewMemNetwork(batchiotest.MemConfig{})
		if err != nil {
			t.Fatal(err)
		}
		var conns []batchio.Conn
		for i := range 2 {
			c, err := nw.Listen(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), 40000))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			conns = append(conns, c)
		}
		before := heapInUse()
		srv, err := NewServer(ServerConfig{ProtocolID: 1, PrivateKey: testPrivateKey, MaxClients: slots}, conns...)
		if err != nil {
			t.Fatal(err)
		}
		used := heapInUse() - before
		srv.Close()
		return used
	}
	heapFor(16) // warm up: anything allocated once per process
	small, large := heapFor(4096), heapFor(16384)
	perSlot := float64(large-small) / (16384 - 4096)
	t.Logf("2 shards: %.1f MiB at 4,096 slots, %.1f MiB at 16,384 slots: %.0f bytes per slot (slot struct %d bytes)",
		float64(small)/(1<<20), float64(large)/(1<<20), perSlot, unsafe.Sizeof(slot{}))
	if perSlot > 4096 {
		t.Fatalf("%.0f bytes per slot, budget 4096", perSlot)
	}
}

// connectClients connects n clients, each on a UDP socket of its own, to
// srv on loopback, driving them (and srv's shards in manual mode) from
// this goroutine in real time.
func connectClients(tb testing.TB, srv *Server, n int, queue int) []*Client {
	tb.Helper()
	clients := make([]*Client, n)
	for k := range clients {
		conn, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{RecvBuffer: -1, SendBuffer: -1, BatchSize: 16})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { conn.Close() })
		c, err := NewClient(ClientConfig{ReceiveQueueSize: queue}, conn)
		if err != nil {
			tb.Fatal(err)
		}
		token, err := GenerateConnectToken(TokenParams{ProtocolID: shardProtocol, PrivateKey: testPrivateKey,
			ClientID: uint64(k + 1), PublicAddresses: srv.PublicAddresses(), ExpireSeconds: 30, TimeoutSeconds: 30})
		if err != nil {
			tb.Fatal(err)
		}
		if err := c.Connect(token, time.Now()); err != nil {
			tb.Fatal(err)
		}
		clients[k] = c
	}
	// Connected on both sides: the server admits a client before the client
	// has seen its first keep-alive.
	deadline := time.Now().Add(60 * time.Second)
	for connected := 0; connected < n && time.Now().Before(deadline); {
		now := time.Now()
		connected = 0
		for _, c := range clients {
			c.Update(now) // connected ones too: they owe keep-alives
			if c.State() == Connected {
				connected++
			}
		}
		if srv.cfg.Manual {
			srv.Update(now)
		}
		srv.Poll(func(*Event) {})
		srv.Wait(now.Add(time.Millisecond))
	}
	if got := srv.NumConnectedClients(); got != n {
		tb.Fatalf("%d of %d clients connected", got, n)
	}
	for i, c := range clients {
		if c.State() != Connected {
			tb.Fatalf("client %d: %v", i, c.State())
		}
	}
	return clients
}

// TestSteadyStateAllocs: once clients are connected over real sockets,
// the whole path allocates nothing, in every goroutine and in both modes:
// client send, recvmmsg, decrypt, replay check, event ring, Poll,
// SendPacket, (default mode) the shard's send queue, seal, sendmmsg,
// client receive.
func TestSteadyStateAllocs(t *testing.T) {
	for _, manual := range []bool{false, true} {
		name, shards := "default", 2
		if manual {
			name, shards = "manual", 1
		}
		t.Run(name, func(t *testing.T) {
			srv, err := Listen(ServerConfig{ProtocolID: shardProtocol, PrivateKey: testPrivateKey, MaxClients: 64,
				Manual: manual, Shards: shards}, batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
			if err != nil {
				t.Skipf("cannot listen on 127.0.0.1: %v", err)
			}
			defer srv.Close()
			testSteadyStateAllocs(t, srv)
		})
	}
}

func testSteadyStateAllocs(t *testing.T, srv *Server) {
	clients := connectClients(t, srv, 8, 64)
	payload := make([]byte, 100)
	buf := make([]byte, codec.MaxPayloadBytes)
	echo := func(ev *Event) {
		if ev.Kind == EventPayload {
			if err := srv.SendPacket(ev.ClientIndex, ev.Payload); err != nil {
				t.Error(err)
			}
		}
	}
	received := 0
	round := func() {
		now := time.Now()
		for _, c := range clients {
			_ = c.SendPacket(payload)
			c.Update(now)
		}
		deadline := now.Add(time.Second)
		for got := 0; got < len(clients) && time.Now().Before(deadline); {
			// AllocsPerRun runs with GOMAXPROCS 1: let the shards run.
			runtime.Gosched()
			if srv.cfg.Manual {
				srv.Update(time.Now())
			}
			srv.Poll(echo)
			srv.Flush()
			for _, c := range clients {
				c.Update(time.Now())
				for {
					if _, _, ok := c.ReceivePacket(buf); !ok {
						break
					}
					got++
					received++
				}
			}
		}
	}
	start := time.Now()
	for range 50 { // warm up: first sends size lazily grown state
		round()
	}
	t.Logf("warm-up: 50 rounds in %v", time.Since(start))
	// A scraper and probes read the server all along, as the metrics
	// collector and the health handlers do: the reads add nothing.
	stopReader := readConcurrently(srv)
	received = 0
	allocs := testing.AllocsPerRun(200, round)
	n := stopReader()
	t.Logf("%v allocations per round of %d echoes (%d echoes received, %d concurrent reads)", allocs, len(clients), received, n)
	if n == 0 {
		t.Fatal("the concurrent reader did not run")
	}
	if received < 150*len(clients) {
		t.Fatalf("only %d echoes in 200 rounds", received)
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per round of %d echoes, want 0", allocs, len(clients))
	}
}

// readConcurrently starts a goroutine that reads srv the way the metrics
// collector (engine/metrics) and the health handlers (engine/health) do,
// over and over, yielding between rounds: ShardStats into a reused buffer,
// Stats, Live, Ready, Draining, the slot counts. stop ends it and returns
// how many rounds it made.
func readConcurrently(srv *Server) (stop func() uint64) {
	var rounds atomic.Uint64
	done, exited := make(chan struct{}), make(chan struct{})
	buf := srv.ShardStats(nil)
	go func() {
		defer close(exited)
		var sink int
		for {
			select {
			case <-done:
				_ = sink
				return
			default:
			}
			buf = srv.ShardStats(buf[:0])
			st := srv.Stats()
			if srv.Live(time.Minute) && srv.Ready() && !srv.Draining() {
				sink += st.Connected + buf[0].Connected + srv.NumConnectedClients() + srv.MaxClients()
			}
			rounds.Add(1)
			runtime.Gosched()
		}
	}()
	return func() uint64 {
		close(done)
		<-exited
		return rounds.Load()
	}
}

// BenchmarkTenThousandClients connects 10,000 clients to one 2-shard server
// in this process and reports the server's memory per slot. Run it alone:
//
//	go test -run '^$' -bench TenThousand -benchtime 1x ./engine
func BenchmarkTenThousandClients(b *testing.B) {
	const slots, n = 16384, 10000
	for range b.N {
		base := heapInUse()
		srv, err := Listen(ServerConfig{ProtocolID: shardProtocol, PrivateKey: testPrivateKey, MaxClients: slots, Shards: 2},
			batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
		if err != nil {
			b.Fatal(err)
		}
		fixed := heapInUse() - base
		start := time.Now()
		clients := connectClients(b, srv, n, 4)
		elapsed := time.Since(start)
		withClients := heapInUse() - base
		// The clients live in this process too: subtract their share,
		// measured as the heap a batch of idle clients takes.
		probeBase := heapInUse()
		probe := make([]*Client, 100)
		for i := range probe {
			conn, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{RecvBuffer: -1, SendBuffer: -1, BatchSize: 16})
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			probe[i], _ = NewClient(ClientConfig{ReceiveQueueSize: 4}, conn)
		}
		perClient := float64(heapInUse()-probeBase) / float64(len(probe))
		runtime.KeepAlive(probe)
		serverHeap := float64(withClients) - perClient*n
		b.ReportMetric(float64(fixed)/slots, "fixed-B/slot")
		b.ReportMetric((serverHeap-float64(fixed))/n, "added-B/connected-client")
		b.ReportMetric(float64(n)/elapsed.Seconds(), "connects/s")
		b.Logf("%d clients connected in %v; server fixed %.1f MiB (%d slots), with clients %.1f MiB (%.0f B each estimated)",
			n, elapsed, float64(fixed)/(1<<20), slots, serverHeap/(1<<20), perClient)
		for _, c := range clients {
			c.Close()
		}
		srv.Close()
	}
}

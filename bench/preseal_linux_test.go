//go:build linux

package bench

import (
	"errors"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/engine"
)

// TestEndToEndPresealed: shared-socket clients whose payloads are sealed
// ahead lose nothing over two windows with a pause between (the server
// keeps taking their keep-alives after a sealed block), and every echo is
// timed from its payload's sealed stamp.
func TestEndToEndPresealed(t *testing.T) {
	const clients, rate, d = 300, 50, time.Second
	echo, load := presealedLoad(t, clients, 2, nil)
	if want := int64(clients) * (rate + 1) * (100 + presealSlot + 2); load.PresealBytes(rate, d) != want {
		t.Fatalf("PresealBytes = %d; want %d", load.PresealBytes(rate, d), want)
	}
	clean := 0
	for attempt := 0; attempt < 2*e2eAttempts && clean < 2; attempt++ {
		// As netbench does: more lead when sealing ended late (-race, a
		// busy machine).
		var start time.Time
		for try := 0; ; try++ {
			start = time.Now().Add(150*time.Millisecond + load.PresealLead(rate, d)<<try)
			err := load.BeginWindow(rate, start, d)
			if err == nil {
				break
			}
			if !errors.Is(err, ErrPresealLate) || try == 4 {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Until(start.Add(d + 500*time.Millisecond)))
		tot := load.Totals()
		if tot.Sent != clients*rate || tot.Lost() != 0 || tot.Bad != 0 || tot.Hist.TotalCount() != int64(tot.Received) {
			t.Logf("attempt %d: sent %d received %d lost %d bad %d lag %d timed %d", attempt, tot.Sent, tot.Received, tot.Lost(), tot.Bad,
				tot.SendLag, tot.Hist.TotalCount())
			clean = 0
			settle(load)
			continue
		}
		if p := PercentilesOf(tot.Hist); p.P50 <= 0 || p.Max > float64(time.Second/time.Microsecond) {
			t.Fatalf("round trips %+v: not timed from the sealed stamps", p)
		}
		clean++
		// A pause longer than the keep-alive interval between windows.
		time.Sleep(3 * engine.PacketSendInterval)
	}
	if clean < 2 {
		t.Fatal("no two clean windows in a row with sealed payloads")
	}
	if load.sealNs.Load() == 0 {
		t.Fatal("nothing was sealed ahead")
	}
	if c := echo.Counters(); c.Connected != clients {
		t.Fatalf("server has %d clients connected; want %d", c.Connected, clients)
	}
	if err := load.Close(); err != nil {
		t.Fatal(err)
	}
	if st := load.SharedStats(); st.SendDropped != 0 {
		t.Fatalf("shared sockets: %+v", st)
	}
}

// TestPresealLongLead: a window that starts long after its payloads were
// sealed (more keep-alive intervals away than a fixed gap would cover)
// loses none of them. With too small a gap below the sealed block, the
// clients' keep-alives meanwhile would push their counters past the block,
// and the server would drop the block's packets more than its replay
// window (256) older than those keep-alives.
func TestPresealLongLead(t *testing.T) {
	const clients, rate, d, lead = 20, 250, 1200 * time.Millisecond, 8 * time.Second
	if n := presealCount(rate, d); n <= 256 {
		t.Fatalf("a client seals %d payloads; the test needs more than the replay window", n)
	}
	if gap, ok := presealGap(lead); !ok || gap <= int(lead/engine.PacketSendInterval) {
		t.Fatalf("presealGap(%v) = %d, %v; want more than one a keep-alive interval", lead, gap, ok)
	}
	if _, ok := presealGap(maxPresealGap * engine.PacketSendInterval); ok {
		t.Fatal("presealGap accepts a wait longer than its largest gap covers")
	}
	_, load := presealedLoad(t, clients, 1, nil)
	start := time.Now().Add(lead)
	if err := load.BeginWindow(rate, start, d); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(start.Add(d + 500*time.Millisecond)))
	tot := load.Totals()
	if tot.Sent != uint64(clients*rate*d/time.Second) || tot.Lost() != 0 || tot.Bad != 0 {
		t.Fatalf("sent %d received %d lost %d bad %d lag %d; want %d sent, none lost", tot.Sent, tot.Received, tot.Lost(), tot.Bad,
			tot.SendLag, clients*rate*d/time.Second)
	}
	if load.sealNs.Load() == 0 {
		t.Fatal("nothing was sealed ahead")
	}
}

// readCounter counts a worker's reads.
type readCounter struct {
	batchio.Conn
	reads atomic.Int64
}

func (c *readCounter) ReadBatch(msgs []batchio.Message) (int, error) {
	c.reads.Add(1)
	return c.Conn.ReadBatch(msgs)
}

func (c *readCounter) Unwrap() batchio.Conn { return c.Conn }

// TestPresealReads: a worker sealing a long window ahead goes on reading
// its socket, so the replies that arrive meanwhile are not left to
// overflow it.
func TestPresealReads(t *testing.T) {
	const clients, rate, d = 400, 60, 10 * time.Second
	var rc *readCounter
	_, load := presealedLoad(t, clients, 1, func(l *Load) {
		rc = &readCounter{Conn: l.workers[0].conn}
		l.workers[0].conn = rc
	})
	r0, t0 := rc.reads.Load(), time.Now()
	if err := load.BeginWindow(rate, time.Now().Add(time.Minute), d); err != nil {
		t.Fatal(err)
	}
	took, reads := time.Since(t0), rc.reads.Load()-r0
	// One read every presealReadEvery while sealing; a worker that only
	// seals reads at most once before it starts and once after.
	if want := int64(took / presealReadEvery / 4); took > 20*presealReadEvery && reads < want {
		t.Fatalf("%d reads while sealing for %v; want at least %d", reads, took, want)
	}
	t.Logf("sealed %d payloads in %v with %d reads", clients*(rate*10+1), took, reads)
}

// presealedLoad starts an echo server and a shared-socket load of
// clients on workers that seals ahead, runs before (if not nil) on the
// load before it starts, and waits for every client to connect.
func presealedLoad(t *testing.T, clients, workers int, before func(*Load)) (*EchoServer, *Load) {
	t.Helper()
	key := testKey(t)
	echo, addr := startTestEcho(t, key, clients)
	load, err := NewLoad(LoadConfig{Server: addr, PrivateKey: key, ProtocolID: testProtocolID, Clients: clients, PayloadBytes: 100,
		Sockets: SocketsShared, Workers: workers, PresealLimit: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { load.Close() })
	if before != nil {
		before(load)
	}
	load.Start()
	if n := load.WaitConnected(10*time.Second, nil); n != clients {
		t.Fatalf("%d of %d clients connected", n, clients)
	}
	return echo, load
}

// TestPresealLimit: a window whose sealed payloads would exceed the limit
// is refused with an error naming the limit, and changes nothing.
func TestPresealLimit(t *testing.T) {
	key := testKey(t)
	_, addr := startTestEcho(t, key, 4)
	load, err := NewLoad(LoadConfig{Server: addr, PrivateKey: key, ProtocolID: testProtocolID, Clients: 4, PayloadBytes: 100,
		Sockets: SocketsShared, Workers: 1, PresealLimit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer load.Close()
	load.Start()
	// 4 clients x 60 Hz x 2000 s x 127 bytes: about 58 MiB.
	err = load.BeginWindow(60, time.Now().Add(time.Second), 2000*time.Second)
	if err == nil || !strings.Contains(err.Error(), "limit of 1 MiB") {
		t.Fatalf("BeginWindow over the limit: %v; want an error naming the limit of 1 MiB", err)
	}
	if load.winStart.Load() != noWindow || load.interval.Load() != 0 {
		t.Fatal("a refused window changed the load's window or rate")
	}
	if _, err := NewLoad(LoadConfig{Server: addr, PrivateKey: key, ProtocolID: testProtocolID, Clients: 1, PayloadBytes: 100,
		PresealLimit: -1}); err == nil {
		t.Fatal("NewLoad took a negative preseal limit")
	}
}

// discardConn is a client's socket that, once switched, drops what the
// client writes, so that a benchmark times the client's side of a send
// without the system call and the server behind it.
type discardConn struct {
	batchio.Conn
	discard atomic.Bool
	dropped uint64
}

func (c *discardConn) WriteBatch(msgs []batchio.Message) (int, error) {
	if c.discard.Load() {
		c.dropped += uint64(len(msgs))
		return len(msgs), nil
	}
	return c.Conn.WriteBatch(msgs)
}

// connectedInputClient returns a game client connected to a real server
// on loopback, driven by the caller, its writes switched to be dropped.
func connectedInputClient(tb testing.TB) (*engine.Client, *discardConn) {
	tb.Helper()
	key := make([]byte, 32)
	key[0] = 1
	srv, err := engine.Listen(engine.ServerConfig{ProtocolID: testProtocolID, PrivateKey: key, MaxClients: 1, Shards: 1},
		batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	sock, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sock.Close() })
	conn := &discardConn{Conn: sock}
	cl, err := engine.NewClient(engine.ClientConfig{}, conn)
	if err != nil {
		tb.Fatal(err)
	}
	token, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: testProtocolID, PrivateKey: key, ClientID: 7,
		PublicAddresses: srv.LocalAddrs(), ExpireSeconds: 30, TimeoutSeconds: 10, Now: time.Now()})
	if err != nil {
		tb.Fatal(err)
	}
	if err := cl.Connect(token, time.Now()); err != nil {
		tb.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); cl.State() != engine.Connected; {
		if time.Now().After(deadline) {
			tb.Fatalf("client not connected: %v", cl.State())
		}
		cl.Update(time.Now())
		time.Sleep(time.Millisecond)
	}
	conn.discard.Store(true)
	return cl, conn
}

// sealInputs seals n 64-byte stamped inputs ahead into one arena.
func sealInputs(tb testing.TB, cl *engine.Client, n int) ([]byte, []uint16, int) {
	tb.Helper()
	const size = 64
	slot := size + presealSlot
	if err := cl.ReserveSequences(presealGapMargin, n); err != nil {
		tb.Fatal(err)
	}
	buf, lens, pay := make([]byte, n*slot), make([]uint16, n), make([]byte, size)
	for k := range n {
		PutStamp(pay, int64(k), uint64(k))
		m, err := cl.SealNext(buf[k*slot:(k+1)*slot], pay)
		if err != nil {
			tb.Fatal(err)
		}
		lens[k] = uint16(m)
	}
	return buf, lens, slot
}

// TestSealedSendAllocs: the steady-state send of an input, sealed ahead or
// sealed as it goes, allocates nothing.
func TestSealedSendAllocs(t *testing.T) {
	cl, _ := connectedInputClient(t)
	buf, lens, slot := sealInputs(t, cl, 200)
	k := 0
	if a := testing.AllocsPerRun(100, func() {
		if err := cl.SendSealed(buf[k*slot:][:lens[k]]); err != nil {
			t.Fatal(err)
		}
		k++
		cl.Flush()
	}); a != 0 {
		t.Errorf("a sealed send allocates %.1f times", a)
	}
	pay := make([]byte, 64)
	seq := uint64(0)
	if a := testing.AllocsPerRun(100, func() {
		PutStamp(pay, int64(seq), seq)
		seq++
		if err := cl.SendPacket(pay); err != nil {
			t.Fatal(err)
		}
		cl.Flush()
	}); a != 0 {
		t.Errorf("a live send allocates %.1f times", a)
	}
}

// BenchmarkLoadInputSend is the load's own cost of sending one 64-byte
// game input, the system call left out: stamped and sealed as it goes
// (live), as the load did before, or sealed before the window (sealed).
func BenchmarkLoadInputSend(b *testing.B) {
	b.Run("live", func(b *testing.B) {
		cl, conn := connectedInputClient(b)
		pay := make([]byte, 64)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			PutStamp(pay, int64(i), uint64(i))
			if err := cl.SendPacket(pay); err != nil {
				b.Fatal(err)
			}
			cl.Flush()
		}
		b.ReportMetric(float64(conn.dropped)/b.Elapsed().Seconds(), "packets/s")
	})
	b.Run("sealed", func(b *testing.B) {
		cl, conn := connectedInputClient(b)
		n := min(b.N, engine.MaxReservedSequences)
		buf, lens, slot := sealInputs(b, cl, n)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			k := i % n
			if err := cl.SendSealed(buf[k*slot:][:lens[k]]); err != nil {
				b.Fatal(err)
			}
			cl.Flush()
		}
		b.ReportMetric(float64(conn.dropped)/b.Elapsed().Seconds(), "packets/s")
	})
}

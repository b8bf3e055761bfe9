package bench

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
)

// newTestBare makes a bare game server of maxClients on a scriptable
// conn, with its loop's clock started at t0; the test drives step.
func newTestBare(t testing.TB, cfg BareConfig, t0 time.Time) (*bareLoop, *batchiotest.Conn) {
	t.Helper()
	conn := batchiotest.NewConn(netip.MustParseAddrPort("127.0.0.1:9000"))
	s, err := NewBareServer(cfg, conn)
	if err != nil {
		t.Fatal(err)
	}
	b := s.loops[0]
	b.clock = newTickClock(t0, max(cfg.TickHz, 1))
	b.lastScan = t0
	return b, conn
}

func input(seq uint64) []byte {
	p := make([]byte, 64)
	PutStamp(p, 1, seq)
	return p
}

func TestBareGame(t *testing.T) {
	t0 := time.Unix(5000, 0)
	b, conn := newTestBare(t, BareConfig{Game: true, TickHz: 10, SnapshotBytes: 300, MaxClients: 2}, t0)
	a1 := netip.MustParseAddrPort("127.1.0.1:5000")
	a2 := netip.MustParseAddrPort("127.1.0.2:5000")
	a3 := netip.MustParseAddrPort("127.1.0.3:5000")

	// A hello is answered; tick 0 goes to the one client.
	conn.Push(a1, []byte{bareHello})
	if _, err := b.step(t0); err != nil {
		t.Fatal(err)
	}
	got := conn.Take(a1)
	if len(got) != 2 || len(got[0]) != 1 || got[0][0] != bareHello {
		t.Fatalf("to a1: %d datagrams; want the hello answer and a snapshot", len(got))
	}
	if ns, tick, ok := ReadSnapshotStamp(got[1]); !ok || tick != 0 || ns <= 0 || len(got[1]) != 300 {
		t.Fatalf("snapshot: %d bytes, stamp %d %d %v", len(got[1]), ns, tick, ok)
	}

	// An input registers a second client, and its sequence comes back in
	// its snapshots; a third client finds no room; junk is dropped.
	conn.Push(a2, input(77))
	conn.Push(a3, []byte{bareHello})
	conn.Push(a1, []byte{9, 9})
	if _, err := b.step(t0.Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	s2 := conn.Take(a2)
	if len(s2) != 1 || binary.LittleEndian.Uint64(s2[0][snapshotInputOffset:]) != 77 {
		t.Fatalf("to a2: %d datagrams; want tick 1 carrying input 77", len(s2))
	}
	if _, tick, _ := ReadSnapshotStamp(s2[0]); tick != 1 {
		t.Fatalf("a2's snapshot is of tick %d; want 1", tick)
	}
	if n := len(conn.Take(a3)); n != 0 {
		t.Fatalf("a3, beyond MaxClients, was sent %d datagrams", n)
	}
	if n := len(conn.Take(a1)); n != 1 {
		t.Fatalf("a1 was sent %d datagrams; want tick 1", n)
	}
	if c := b.srv.Counters(); c.Connected != 2 || c.Inputs != 1 || c.Dropped != 2 || c.Snapshots != 3 || c.Ticks != 2 {
		t.Fatalf("counters %+v", c)
	}

	// A bye removes a client; a late tick skips numbers.
	conn.Push(a1, []byte{bareBye})
	if _, err := b.step(t0.Add(350 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n := len(conn.Take(a1)); n != 0 {
		t.Fatalf("a1 left but was sent %d datagrams", n)
	}
	s2 = conn.Take(a2)
	if _, tick, _ := ReadSnapshotStamp(s2[0]); len(s2) != 1 || tick != 3 {
		t.Fatalf("a2 got %d datagrams, tick %d; want tick 3 (2 skipped)", len(s2), tick)
	}
	if c := b.srv.Counters(); c.TicksSkipped != 1 || c.Connected != 1 {
		t.Fatalf("counters %+v", c)
	}

	// A silent client is forgotten after bareTimeout.
	if _, err := b.step(t0.Add(bareTimeout + 2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if c := b.srv.Counters(); c.Connected != 0 {
		t.Fatalf("%d clients after the timeout", c.Connected)
	}
	if _, n := b.srv.TakeTicks(); n != 4 {
		t.Fatalf("%d tick durations; want 4", n)
	}
}

func TestBareEcho(t *testing.T) {
	b, conn := newTestBare(t, BareConfig{}, time.Unix(0, 0))
	a := netip.MustParseAddrPort("127.1.0.1:5000")
	for i := range 100 {
		conn.Push(a, input(uint64(i)))
	}
	if _, err := b.step(time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	got := conn.Take(a)
	if len(got) != 100 {
		t.Fatalf("echoed %d of 100", len(got))
	}
	for i, p := range got {
		if _, seq, _ := ReadStamp(p); seq != uint64(i) || len(p) != 64 {
			t.Fatalf("echo %d: %d bytes, sequence %d", i, len(p), seq)
		}
	}
	if c := b.srv.Counters(); c.PacketsIn != 100 || c.PacketsOut != 100 || c.Echoed != 100 {
		t.Fatalf("counters %+v", c)
	}
}

func TestBareConfigErrors(t *testing.T) {
	conn := batchiotest.NewConn(netip.MustParseAddrPort("127.0.0.1:9000"))
	for _, cfg := range []BareConfig{
		{Game: true, TickHz: 0, SnapshotBytes: 300, MaxClients: 1},
		{Game: true, TickHz: 60, SnapshotBytes: 8, MaxClients: 1},
		{Game: true, TickHz: 60, SnapshotBytes: 300, MaxClients: 0},
	} {
		if _, err := NewBareServer(cfg, conn); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	if _, err := NewBareServer(BareConfig{}); err == nil {
		t.Error("no conns accepted")
	}
}

// TestBareSteadyStateAllocs: a bare game server's pass with its clients
// known (inputs in, a tick's snapshots out) allocates nothing.
func TestBareSteadyStateAllocs(t *testing.T) {
	t0 := time.Unix(5000, 0)
	b, conn := newTestBare(t, BareConfig{Game: true, TickHz: 1000, SnapshotBytes: 300, MaxClients: 100}, t0)
	conn.Discard = true
	addrs := make([]netip.AddrPort, 100)
	for i := range addrs {
		addrs[i] = netip.AddrPortFrom(muxAddrForTest(i), 5000)
		conn.Push(addrs[i], []byte{bareHello})
	}
	if _, err := b.step(t0); err != nil {
		t.Fatal(err)
	}
	in := input(1)
	now := t0
	pass := func() {
		for _, a := range addrs[:10] {
			conn.Push(a, in)
		}
		now = now.Add(time.Millisecond)
		if _, err := b.step(now); err != nil {
			t.Fatal(err)
		}
	}
	// Push copies into the fake's ring, whose slots get their buffers in
	// the first round through it.
	for range 50 {
		pass()
	}
	if allocs := testing.AllocsPerRun(100, pass); allocs != 0 {
		t.Fatalf("a pass allocates %.1f times", allocs)
	}
	if c := b.srv.Counters(); c.Connected != 100 || c.Ticks < 100 {
		t.Fatalf("counters %+v", c)
	}
}

func muxAddrForTest(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, 1, byte(i >> 8), byte(1 + i%250)})
}

// FuzzBareHandle: any datagram from any address leaves the bare game
// server's table consistent and within MaxClients.
func FuzzBareHandle(f *testing.F) {
	f.Add([]byte{bareHello}, uint16(1))
	f.Add([]byte{bareBye}, uint16(1))
	f.Add(input(5), uint16(2))
	f.Add([]byte{}, uint16(3))
	t0 := time.Unix(5000, 0)
	f.Fuzz(func(t *testing.T, d []byte, port uint16) {
		b, _ := newTestBare(t, BareConfig{Game: true, TickHz: 10, SnapshotBytes: 300, MaxClients: 3}, t0)
		for i := range 6 {
			from := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port+uint16(i%4))
			b.handle(d, from, t0)
			if i == 2 {
				b.handle([]byte{bareBye}, from, t0)
			}
		}
		if len(b.clients) > 3 || len(b.byAddr) != len(b.clients) {
			t.Fatalf("%d clients, %d addresses", len(b.clients), len(b.byAddr))
		}
		for i, c := range b.clients {
			if b.byAddr[c.addr] != int32(i) {
				t.Fatalf("client %d at %v is filed under %d", i, c.addr, b.byAddr[c.addr])
			}
		}
	})
}

//go:build linux

package bench

import (
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// testAccountLoad is a load of two game clients, sampled and not, around
// a worker, without sockets: enough for account and placeByEdges.
func testAccountLoad(t *testing.T, bare bool) (*Load, *muxWorker, *loadClient) {
	t.Helper()
	start := time.Unix(1000, 0)
	l := &Load{cfg: LoadConfig{Mode: LoadGame, SnapshotBytes: 300, TickHz: 60, Bare: bare}, start: start,
		replySize: 300, sample: 2}
	l.shards = []*loadShard{{hist: NewHistogram()}}
	l.winStart.Store(int64(time.Second))
	l.winEnd.Store(int64(3 * time.Second))
	w := &muxWorker{l: l, shard: l.shards[0]}
	c := &loadClient{idx: 1, up: true, lastFull: start.Add(1500 * time.Millisecond)}
	return l, w, c
}

// TestPlaceByEdges: a snapshot that arrived before the window or long
// after it is out; one that arrived between is placed by its packet
// sequence against the first ones the client opened in the window and
// after it, and opened while those are not known.
func TestPlaceByEdges(t *testing.T) {
	l, _, c := testAccountLoad(t, false)
	ms := func(n int) int64 { return int64(time.Duration(n) * time.Millisecond) }
	start, end := l.winStart.Load(), l.winEnd.Load()
	for i, tt := range []struct {
		learnSent int64 // an opened snapshot sent then (0: none) ...
		learnSeq  uint64
		at        int64 // ... before this one arrives
		seq       uint64
		want      int
	}{
		{0, 0, ms(999), 10, zoneIgnore},     // arrived before the window: sent before it
		{0, 0, ms(1010), 10, zoneOpen},      // in it, no edge known
		{ms(995), 4, ms(1020), 5, zoneOpen}, // opened one sent before the start: still none
		{ms(1005), 5, ms(1030), 4, zoneIgnore},
		{0, 0, ms(1030), 6, zoneCount},
		{0, 0, ms(2999), 100, zoneCount},          // arrived before the end: sent before it
		{0, 0, ms(3000), 101, zoneOpen},           // after the end, no edge known
		{ms(2990), 101, ms(3001), 101, zoneOpen},  // opened: sent before the end
		{ms(3001), 102, ms(3100), 101, zoneCount}, // a late one from the window
		{0, 0, ms(3100), 102, zoneIgnore},
		{0, 0, ms(4000), 101, zoneIgnore}, // past lateLimit
	} {
		if tt.learnSent != 0 {
			c.edges.learn(start, end, tt.learnSent, tt.learnSeq)
		}
		if got := l.placeByEdges(c, tt.seq, tt.at); got != tt.want {
			t.Errorf("case %d: seq %d at %v = %d; want %d", i, tt.seq, time.Duration(tt.at), got, tt.want)
		}
	}
	// The next window forgets these edges.
	l.winStart.Store(ms(5000))
	l.winEnd.Store(ms(7000))
	if got := l.placeByEdges(c, 300, ms(5100)); got != zoneOpen {
		t.Errorf("next window, no edge known: %d; want %d (open)", got, zoneOpen)
	}
	l.winStart.Store(noWindow)
	if got := l.placeByEdges(c, 300, ms(2000)); got != zoneIgnore {
		t.Errorf("zone with no window = %d", got)
	}
}

// TestFullPathStagger: clients that opened a reply at the same moment
// turn to the full path again over fullPathSpread, not in one tick.
func TestFullPathStagger(t *testing.T) {
	seen := map[time.Duration]bool{}
	for j := range 256 {
		d := fullPathStagger(j)
		if d < 0 || d >= fullPathSpread {
			t.Fatalf("client %d: stagger %v; want in [0, %v)", j, d, fullPathSpread)
		}
		seen[d] = true
	}
	if len(seen) < 64 {
		t.Fatalf("256 clients have %d distinct staggers; want 64", len(seen))
	}
}

// TestAccount: a client that does not open its replies counts snapshots
// of the right size by their clear sequence in the window's middle, not
// duplicates, and leaves to the full path anything else.
func TestAccount(t *testing.T) {
	for _, bare := range []bool{false, true} {
		l, w, c := testAccountLoad(t, bare)
		key := testPacketKey(t)
		packet := func(seq uint64, size int) *batchio.Message {
			m := &batchio.Message{Buf: make([]byte, codec.MaxPacketBytes)}
			if bare {
				PutSnapshotStamp(m.Buf[:size], 0, seq)
				m.N = size
				return m
			}
			n, err := codec.WritePayloadPacket(m.Buf, seq, make([]byte, size), key)
			if err != nil {
				t.Fatal(err)
			}
			m.N = n
			return m
		}
		mid := l.start.Add(2 * time.Second)
		// The client opened the window's first snapshot, sequence 5.
		c.edges.learn(l.winStart.Load(), l.winEnd.Load(), int64(time.Second), 5)
		for _, tt := range []struct {
			name    string
			m       *batchio.Message
			at      time.Time
			prep    func()
			handled bool
			recv    uint64 // winRecv after
		}{
			{"counted", packet(10, 300), mid, nil, true, 1},
			{"duplicate", packet(10, 300), mid, nil, true, 1},
			{"next", packet(11, 300), mid, nil, true, 2},
			{"other size", packet(12, 64), mid, nil, false, 2},
			{"sent before the window's first", packet(3, 300), l.start.Add(time.Second + 10*time.Millisecond), nil, true, 2},
			{"after the end, its edge not known", packet(12, 300), l.start.Add(3*time.Second + 10*time.Millisecond), nil, false, 2},
			{"before the window", packet(12, 300), l.start.Add(500 * time.Millisecond), nil, true, 2},
			{"sampled client", packet(12, 300), mid, func() { c.sampled = true }, false, 2},
			{"not connected", packet(12, 300), mid, func() { c.sampled, c.up = false, false }, false, 2},
			{"a second since the full path", packet(12, 300), mid, func() { c.up, c.lastFull = true, mid.Add(-time.Second) }, false, 2},
			{"full path fresh", packet(12, 300), mid, func() { c.lastFull = mid }, true, 3},
		} {
			if tt.prep != nil {
				tt.prep()
			}
			if got := w.account(c, tt.m, tt.at); got != tt.handled || c.winRecv.Load() != tt.recv {
				t.Fatalf("bare=%v %s: handled %v, %d counted; want %v, %d", bare, tt.name, got, c.winRecv.Load(), tt.handled, tt.recv)
			}
		}
		if w.fast.Received != 3 || w.fast.Duplicates != 1 {
			t.Fatalf("bare=%v: worker counted %d received, %d duplicates; want 3 and 1", bare, w.fast.Received, w.fast.Duplicates)
		}
		w.addFast()
		if s := l.shards[0]; s.Received != 3 || s.Duplicates != 1 || w.fast.Received != 0 {
			t.Fatalf("bare=%v: shard has %d received, %d duplicates after addFast", bare, s.Received, s.Duplicates)
		}
		m := packet(13, 300)
		if allocs := testing.AllocsPerRun(100, func() { w.account(c, m, mid) }); allocs != 0 {
			t.Fatalf("account allocates %.1f times", allocs)
		}
	}
}

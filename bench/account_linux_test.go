//go:build linux

package bench

import (
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// testAccountLoad is a load of two game clients, sampled and not, around
// a worker, without sockets: enough for account and fastZone.
func testAccountLoad(t *testing.T, bare bool) (*Load, *muxWorker, *loadClient) {
	t.Helper()
	start := time.Unix(1000, 0)
	l := &Load{cfg: LoadConfig{Mode: LoadGame, SnapshotBytes: 300, TickHz: 60, Bare: bare}, start: start,
		replySize: 300, margin: int64(50 * time.Millisecond), sample: 2}
	l.shards = []*loadShard{{hist: NewHistogram()}}
	l.winStart.Store(int64(time.Second))
	l.winEnd.Store(int64(3 * time.Second))
	w := &muxWorker{l: l, shard: l.shards[0]}
	c := &loadClient{idx: 1, up: true, lastFull: start.Add(1500 * time.Millisecond)}
	return l, w, c
}

func TestFastZone(t *testing.T) {
	l, _, _ := testAccountLoad(t, false)
	ms := func(n int) int64 { return int64(time.Duration(n) * time.Millisecond) }
	for _, tt := range []struct {
		at   int64
		want int
	}{
		{ms(999), zoneIgnore},  // before the window: sent before it
		{ms(1000), zoneOpen},   // the start's edge
		{ms(1049), zoneOpen},   //
		{ms(1050), zoneCount},  // past the margin
		{ms(2949), zoneCount},  //
		{ms(2950), zoneOpen},   // the end's edge, and after it
		{ms(3999), zoneOpen},   //
		{ms(4000), zoneIgnore}, // past lateLimit
	} {
		if got := l.fastZone(tt.at); got != tt.want {
			t.Errorf("zone at %v = %d; want %d", time.Duration(tt.at), got, tt.want)
		}
	}
	l.winStart.Store(noWindow)
	if got := l.fastZone(ms(2000)); got != zoneIgnore {
		t.Errorf("zone with no window = %d", got)
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
			{"at the start's edge", packet(12, 300), l.start.Add(time.Second + 10*time.Millisecond), nil, false, 2},
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

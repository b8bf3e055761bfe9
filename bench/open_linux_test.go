//go:build linux

package bench

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

// TestOpen: a sampled client's worker opens its snapshots with the key
// from the client's token, counts and times them as the engine path would,
// counts a reply that fails to open as bad, and hands the engine client a
// reply a second and anything that is not a snapshot.
func TestOpen(t *testing.T) {
	l, w, c := testAccountLoad(t, false)
	l.startWall = l.start.UnixNano()
	c.sampled, c.shard = true, l.shards[0]
	s := l.shards[0]
	token, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: testProtocolID, PrivateKey: testKey(t), ClientID: 1,
		PublicAddresses: []netip.AddrPort{netip.MustParseAddrPort("198.18.0.1:40000")}, ExpireSeconds: 30, TimeoutSeconds: 5, Now: l.start})
	if err != nil {
		t.Fatal(err)
	}
	if c.open, err = newOpenKey(token, testProtocolID); err != nil {
		t.Fatal(err)
	}
	var ct codec.ConnectToken
	if err := codec.ReadConnectToken(token, &ct); err != nil {
		t.Fatal(err)
	}
	server, err := aead.NewPacketKey(ct.ServerToClientKey[:], testProtocolID)
	if err != nil {
		t.Fatal(err)
	}
	mid := l.start.Add(2 * time.Second)
	sent := mid.Add(-3 * time.Millisecond)
	packet := func(seq uint64, size int, key codec.PacketSealer) *batchio.Message {
		m := &batchio.Message{Buf: make([]byte, codec.MaxPacketBytes)}
		payload := make([]byte, size)
		PutSnapshotStamp(payload, sent.UnixNano(), 7)
		n, err := codec.WritePayloadPacket(m.Buf, seq, payload, key)
		if err != nil {
			t.Fatal(err)
		}
		m.N = n
		return m
	}
	other := testPacketKey(t) // another session's key
	for _, tt := range []struct {
		name           string
		m              *batchio.Message
		prep           func()
		handled        bool
		recv, dup, bad uint64
		timed          int64
	}{
		{"opened", packet(10, 300, server), nil, true, 1, 0, 0, 1},
		{"duplicate", packet(10, 300, server), nil, true, 1, 1, 0, 1},
		{"next", packet(11, 300, server), nil, true, 2, 1, 0, 2},
		{"another key", packet(12, 300, other), nil, true, 2, 1, 1, 2},
		{"other size", packet(12, 64, server), nil, false, 2, 1, 1, 2},
		{"a second since the full path", packet(12, 300, server), func() { c.lastFull = mid.Add(-time.Second) }, false, 2, 1, 1, 2},
		{"not connected", packet(12, 300, server), func() { c.lastFull, c.up = mid, false }, false, 2, 1, 1, 2},
		{"no key (not sampled)", packet(12, 300, server), func() { c.up, c.open = true, nil }, false, 2, 1, 1, 2},
	} {
		if tt.prep != nil {
			tt.prep()
		}
		got := w.open(c, tt.m, mid)
		if got != tt.handled || s.Received != tt.recv || s.Duplicates != tt.dup || s.Bad != tt.bad || s.hist.TotalCount() != tt.timed {
			t.Fatalf("%s: handled %v, received %d, duplicates %d, bad %d, timed %d; want %v, %d, %d, %d, %d", tt.name,
				got, s.Received, s.Duplicates, s.Bad, s.hist.TotalCount(), tt.handled, tt.recv, tt.dup, tt.bad, tt.timed)
		}
	}
	if p99 := time.Duration(s.hist.ValueAtQuantile(99)); p99 < 2900*time.Microsecond || p99 > 3100*time.Microsecond {
		t.Fatalf("latency recorded %v; want 3 ms (the stamp's send time to now)", p99)
	}
	if c.winRecv.Load() != 2 {
		t.Fatalf("window count %d; want 2", c.winRecv.Load())
	}
	if _, err := newOpenKey(make([]byte, 10), testProtocolID); err == nil {
		t.Fatal("newOpenKey accepted a token that is not one")
	}
	c.open, _ = newOpenKey(token, testProtocolID)
	m := packet(13, 300, server)
	seal := append([]byte(nil), m.Buf[:m.N]...)
	if allocs := testing.AllocsPerRun(100, func() {
		copy(m.Buf, seal) // open decrypts in place
		w.open(c, m, mid)
	}); allocs != 0 {
		t.Fatalf("open allocates %.1f times", allocs)
	}
}

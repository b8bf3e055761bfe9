package reliable_test

import (
	"bytes"
	"testing"

	"github.com/netcode-go/netcode/reliable"
)

func TestNewPoolArguments(t *testing.T) {
	c := reliable.DefaultConfig()
	for _, tt := range []struct{ buffers, per int }{{0, 1}, {1, 0}, {2, 3}} {
		if _, err := reliable.NewPool(c, tt.buffers, tt.per); err == nil {
			t.Errorf("NewPool(%d, %d) accepted", tt.buffers, tt.per)
		}
	}
	small := c
	small.MaxPacketSize = 1024
	p, err := reliable.NewPool(small, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.Buffers() != 4 || p.Free() != 4 || p.PerEndpoint() != 2 || p.BufferBytes() != 9+1024 {
		t.Errorf("pool: %d buffers, %d free, %d per endpoint, %d bytes", p.Buffers(), p.Free(), p.PerEndpoint(), p.BufferBytes())
	}
	if _, err := reliable.New(c, p); err == nil {
		t.Error("New accepted a pool with buffers too small for its config")
	}
}

// TestPoolExhaustion pins the rule: at its share of the pool an endpoint
// gives up its oldest reassembly for a newer packet and refuses an older
// one; an empty pool refuses; reassemblies in progress complete.
func TestPoolExhaustion(t *testing.T) {
	c := reliable.DefaultConfig()
	pool, err := reliable.NewPool(c, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	tx := mustNew(t, c, nil)
	rx := [3]*reliable.Endpoint{mustNew(t, c, pool), mustNew(t, c, pool), mustNew(t, c, pool)}

	second := payloadRule(2, 3000)
	p0 := mustSend(t, tx, payloadRule(1, 3000))
	p1 := mustSend(t, tx, second)

	// rx[0] starts packet 0 and holds its one allowed buffer.
	if _, r := rx[0].Receive(p0[0]); r != reliable.DropNone {
		t.Fatal(r)
	}
	// Its share is used: newer packet 1 takes the place of packet 0.
	if d, r := rx[0].Receive(p1[0]); r != reliable.DropNone || !d.Evicted || pool.Free() != 1 {
		t.Fatalf("newer packet at the share: %v, evicted %v, %d free; want stored, evicting packet 0", r, d.Evicted, pool.Free())
	}
	// Packet 0 is now older than all rx[0] holds: refused, nothing evicted.
	if d, r := rx[0].Receive(p0[1]); r != reliable.DropReassemblyPoolExhausted || d.Evicted {
		t.Fatalf("older packet at the share: %v, evicted %v; want pool exhausted", r, d.Evicted)
	}
	if n := rx[0].Drops()[reliable.DropReassemblyEvicted]; n != 1 {
		t.Errorf("%d evictions counted, want 1", n)
	}
	// rx[1] takes the last buffer; rx[2] finds none.
	rx[1].Receive(p1[1])
	if _, r := rx[2].Receive(p1[1]); r != reliable.DropReassemblyPoolExhausted || pool.Free() != 0 {
		t.Fatalf("empty pool: %v, %d free", r, pool.Free())
	}
	if rx[2].Drops()[reliable.DropReassemblyPoolExhausted] != 1 || rx[2].Counters() != (reliable.Counters{}) {
		t.Errorf("drops %v counters %v", rx[2].Drops(), rx[2].Counters())
	}
	// Packet 1 completes on rx[0].
	var d reliable.Delivery
	for _, dg := range p1[1:] {
		d, _ = rx[0].Receive(dg)
	}
	if !d.Delivered || !bytes.Equal(d.Payload, second) {
		t.Fatal("packet in progress did not complete")
	}
	// Its buffer returns on rx[0]'s next Receive; Reset returns rx[1]'s.
	rx[0].Receive([]byte{})
	rx[1].Reset()
	if pool.Free() != 2 {
		t.Errorf("%d buffers free, want 2", pool.Free())
	}
}

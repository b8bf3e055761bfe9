package bench

import (
	"testing"
	"time"
)

// TestPerPacketPathAllocs: what a load client does for every payload it
// sends and every echo it receives (stamp, read the stamp, sequence
// accounting, histogram record) allocates nothing.
func TestPerPacketPathAllocs(t *testing.T) {
	p := make([]byte, 100)
	h := NewHistogram()
	var tr SeqTracker
	seq := uint64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		PutStamp(p, int64(seq)*1000, seq)
		ns, s, ok := ReadStamp(p)
		if !ok {
			t.Fatal("stamp unreadable")
		}
		tr.Observe(s)
		RecordLatency(h, time.Duration(int64(seq)*1000+5000-ns))
		seq++
	})
	if allocs != 0 {
		t.Fatalf("per-packet path allocates %.1f times", allocs)
	}
	if tr.Received != seq {
		t.Fatalf("tracked %d of %d", tr.Received, seq)
	}
}

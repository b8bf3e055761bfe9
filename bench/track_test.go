package bench

import "testing"

func TestSeqTracker(t *testing.T) {
	tests := []struct {
		name                           string
		seqs                           []uint64
		sent                           uint64
		received, dups, reordered, old uint64
		lost                           uint64
		last                           Arrival
	}{
		{name: "in order", seqs: []uint64{0, 1, 2, 3}, sent: 4, received: 4, last: InOrder},
		{name: "tail lost", seqs: []uint64{0, 1}, sent: 4, received: 2, lost: 2, last: InOrder},
		{name: "gap lost", seqs: []uint64{0, 2, 3}, sent: 4, received: 3, lost: 1, last: InOrder},
		{name: "swap", seqs: []uint64{1, 0, 2}, sent: 3, received: 3, reordered: 1, last: InOrder},
		{name: "late fill", seqs: []uint64{0, 3, 1, 2}, sent: 4, received: 4, reordered: 2, last: Reordered},
		{name: "duplicate", seqs: []uint64{0, 1, 1}, sent: 2, received: 2, dups: 1, last: Duplicate},
		{name: "old duplicate", seqs: []uint64{0, 1, 2, 0}, sent: 3, received: 3, dups: 1, last: Duplicate},
		{name: "reordered then duplicated", seqs: []uint64{2, 1, 1}, sent: 3, received: 2, reordered: 1, dups: 1, lost: 1, last: Duplicate},
		{name: "beyond window", seqs: []uint64{0, 5000, 1}, sent: 5001, received: 3, old: 1, lost: 4998, last: TooOld},
		{name: "edge of window", seqs: []uint64{trackWindow, 1}, sent: trackWindow + 1, received: 2, reordered: 1, lost: trackWindow - 1, last: Reordered},
		{name: "duplicate at window edge", seqs: []uint64{1, trackWindow, 1}, sent: trackWindow + 1, received: 2, dups: 1, lost: trackWindow - 1, last: Duplicate},
		{name: "just beyond window", seqs: []uint64{0, trackWindow, 0}, sent: trackWindow + 1, received: 3, old: 1, lost: trackWindow - 2, last: TooOld},
		{name: "jump clears window", seqs: []uint64{5, 5 + 3*trackWindow, 5 + 3*trackWindow - 1}, sent: 5 + 3*trackWindow + 1, received: 3, reordered: 1, lost: 5 + 3*trackWindow - 2, last: Reordered},
		{name: "more received than sent", seqs: []uint64{0, 1, 2}, sent: 2, received: 3, last: InOrder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr SeqTracker
			var last Arrival
			for _, s := range tt.seqs {
				last = tr.Observe(s)
			}
			if last != tt.last {
				t.Errorf("last arrival %v; want %v", last, tt.last)
			}
			if tr.Received != tt.received || tr.Duplicates != tt.dups || tr.Reordered != tt.reordered || tr.TooOld != tt.old {
				t.Errorf("received %d dups %d reordered %d too old %d; want %d %d %d %d",
					tr.Received, tr.Duplicates, tr.Reordered, tr.TooOld, tt.received, tt.dups, tt.reordered, tt.old)
			}
			if got := tr.Lost(tt.sent); got != tt.lost {
				t.Errorf("Lost(%d) = %d; want %d", tt.sent, got, tt.lost)
			}
		})
	}
}

// TestSeqTrackerLongRun checks the window over many slides: every other
// sequence arrives one step late.
func TestSeqTrackerLongRun(t *testing.T) {
	var tr SeqTracker
	const n = 10 * trackWindow
	for s := uint64(0); s < n; s += 2 {
		tr.Observe(s + 1)
		tr.Observe(s)
		tr.Observe(s) // duplicate
	}
	if tr.Received != n || tr.Reordered != n/2 || tr.Duplicates != n/2 || tr.TooOld != 0 {
		t.Fatalf("received %d reordered %d dups %d too old %d; want %d %d %d 0", tr.Received, tr.Reordered, tr.Duplicates, tr.TooOld, n, n/2, n/2)
	}
	if tr.Lost(n) != 0 {
		t.Fatalf("Lost = %d; want 0", tr.Lost(n))
	}
}

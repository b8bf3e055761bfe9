package bench

// trackWindow is how many sequences below the highest one received a
// SeqTracker remembers; an echo older than that cannot be told apart from a
// duplicate and is counted as TooOld.
const trackWindow = 1024

// Arrival classifies one received sequence.
type Arrival uint8

const (
	// InOrder: higher than every sequence received before (gaps may be
	// filled later by Reordered arrivals).
	InOrder Arrival = iota
	// Reordered: lower than the highest received, and not seen before.
	Reordered
	// Duplicate: already received.
	Duplicate
	// TooOld: further below the highest received than the window reaches;
	// counted as received once.
	TooOld
)

func (a Arrival) String() string {
	switch a {
	case InOrder:
		return "in order"
	case Reordered:
		return "reordered"
	case Duplicate:
		return "duplicate"
	case TooOld:
		return "too old"
	}
	return "Arrival(?)"
}

// SeqTracker counts the distinct payload sequences one client got back, and
// the duplicates and reordered ones among the arrivals, in constant memory
// and without allocating. Loss is what was sent minus what was received. The
// zero value is ready to use, for sequences that start at 0.
type SeqTracker struct {
	next uint64 // highest sequence received + 1
	seen [trackWindow / 64]uint64

	Received   uint64 // distinct sequences (InOrder + Reordered + TooOld)
	Duplicates uint64
	Reordered  uint64
	TooOld     uint64
}

func (t *SeqTracker) bit(seq uint64) (word int, mask uint64) {
	i := seq % trackWindow
	return int(i / 64), 1 << (i % 64)
}

// Observe records the arrival of seq and says how it arrived.
func (t *SeqTracker) Observe(seq uint64) Arrival {
	if seq >= t.next {
		if seq-t.next >= trackWindow {
			clear(t.seen[:])
		} else {
			// Forget the sequences the window slides over: they are the
			// new gap (not yet received), not old arrivals.
			for s := t.next; s < seq; s++ {
				w, m := t.bit(s)
				t.seen[w] &^= m
			}
		}
		w, m := t.bit(seq)
		t.seen[w] |= m
		t.next = seq + 1
		t.Received++
		return InOrder
	}
	if t.next-seq > trackWindow {
		t.TooOld++
		t.Received++
		return TooOld
	}
	w, m := t.bit(seq)
	if t.seen[w]&m != 0 {
		t.Duplicates++
		return Duplicate
	}
	t.seen[w] |= m
	t.Reordered++
	t.Received++
	return Reordered
}

// Lost returns how many of sent sequences have not been received.
func (t *SeqTracker) Lost(sent uint64) uint64 {
	if t.Received >= sent {
		return 0
	}
	return sent - t.Received
}

package reliable

// emptySlot marks a free slot of a sequence buffer (no 16-bit sequence has
// this value).
const emptySlot = 0xFFFFFFFF

// seqBuffer is the index half of the C library's sequence buffer: a ring
// of slots, slot i holding the sequence whose data is at index i of a
// parallel array the owner keeps. sequence is one past the newest sequence
// inserted. Its arithmetic mirrors reliable.c exactly, including the slot
// choice while clearing across the wrap (which matters for sizes that do
// not divide 65536).
type seqBuffer struct {
	sequence uint16
	slots    []uint32
	// mask is len(slots)-1 when that is a power of two (the usual case:
	// the estimates look up hundreds of slots per Update, and a mask is
	// cheaper than a division), else -1.
	mask int
}

func newSeqBuffer(n int) seqBuffer {
	b := seqBuffer{slots: make([]uint32, n), mask: -1}
	if n&(n-1) == 0 {
		b.mask = n - 1
	}
	b.reset()
	return b
}

func (b *seqBuffer) reset() {
	b.sequence = 0
	for i := range b.slots {
		b.slots[i] = emptySlot
	}
}

// index returns the slot of sequence s.
func (b *seqBuffer) index(s uint16) int {
	if b.mask >= 0 {
		return int(s) & b.mask
	}
	return int(s) % len(b.slots)
}

// exists reports whether sequence s is held.
func (b *seqBuffer) exists(s uint16) bool { return b.slots[b.index(s)] == uint32(s) }

// find returns the slot holding sequence s, or -1.
func (b *seqBuffer) find(s uint16) int {
	i := b.index(s)
	if b.slots[i] != uint32(s) {
		return -1
	}
	return i
}

// stale reports whether s is older than the window (the negation of
// reliable_sequence_buffer_test_insert).
func (b *seqBuffer) stale(s uint16) bool {
	return sequenceLess(s, b.sequence-uint16(len(b.slots)))
}

// advance moves the window so that s is its newest sequence, if s is
// newer, clearing the slots it passes; release (may be nil) is called for
// every slot cleared.
func (b *seqBuffer) advance(s uint16, release func(int)) {
	if sequenceGreater(s+1, b.sequence) {
		b.clear(int(b.sequence), int(s), release)
		b.sequence = s + 1
	}
}

// insert stores sequence s and returns its slot, or -1 when s is older
// than the window (reliable_sequence_buffer_insert: the stale check comes
// first, so a sequence more than 32768 - n ahead counts as stale).
func (b *seqBuffer) insert(s uint16) int {
	if b.stale(s) {
		return -1
	}
	b.advance(s, nil)
	i := b.index(s)
	b.slots[i] = uint32(s)
	return i
}

// insertCleanup is reliable_sequence_buffer_insert_with_cleanup: a newer
// sequence moves the window first (so any sequence up to 32768 ahead is
// accepted), then the stale check; release is called for every occupied
// slot cleared or overwritten.
func (b *seqBuffer) insertCleanup(s uint16, release func(int)) int {
	if sequenceGreater(s+1, b.sequence) {
		b.clear(int(b.sequence), int(s), release)
		b.sequence = s + 1
	} else if b.stale(s) {
		return -1
	}
	i := b.index(s)
	if b.slots[i] != emptySlot {
		release(i)
	}
	b.slots[i] = uint32(s)
	return i
}

// remove frees sequence s's slot (whatever it holds, as the C library
// does) and reports whether it was occupied.
func (b *seqBuffer) remove(s uint16) (int, bool) {
	i := b.index(s)
	occupied := b.slots[i] != emptySlot
	b.slots[i] = emptySlot
	return i, occupied
}

// clear empties the slots of sequences start..finish (finish may have
// wrapped below start), or every slot when that range is at least as long
// as the ring: reliable_sequence_buffer_remove_entries, whose slot for an
// unwrapped sequence above 65535 is (sequence % n), kept here.
func (b *seqBuffer) clear(start, finish int, release func(int)) {
	n := len(b.slots)
	if finish < start {
		finish += 65536
	}
	if finish-start < n {
		for s := start; s <= finish; s++ {
			i := s % n
			if release != nil {
				release(i)
			}
			b.slots[i] = emptySlot
		}
		return
	}
	for i := range b.slots {
		if release != nil {
			release(i)
		}
		b.slots[i] = emptySlot
	}
}

// sequenceGreater reports whether a is newer than b modulo 65536; exactly
// 32768 apart, the larger value is the newer.
func sequenceGreater(a, b uint16) bool {
	return (a > b && a-b <= 32768) || (a < b && b-a > 32768)
}

// sequenceLess reports whether a is older than b.
func sequenceLess(a, b uint16) bool { return sequenceGreater(b, a) }

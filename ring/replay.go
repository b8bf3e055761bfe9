package ring

// ReplayWindowSize is the number of sequences a Replay window remembers.
const ReplayWindowSize = 256

const emptySlot = ^uint64(0)

// Replay is the 256-entry replay-protection window of one session, with the
// C reference's exact behaviour: slot = sequence mod 256; a sequence is a
// duplicate when its slot holds a value >= it; empty slots hold 2^64-1, so
// sequence 2^64-1 is never recorded; once the most recent sequence is at
// least 256, sequences at or below most recent - 256 are too old (this
// comparison never wraps, so sequences near 2^64 behave like any other).
//
// The zero value is not ready: call Reset first.
type Replay struct {
	mostRecent uint64
	received   [ReplayWindowSize]uint64
}

// Reset empties the window.
func (r *Replay) Reset() {
	r.mostRecent = 0
	for i := range r.received {
		r.received[i] = emptySlot
	}
}

// MostRecent returns the highest sequence advanced so far.
func (r *Replay) MostRecent() uint64 { return r.mostRecent }

// AlreadyReceived reports whether seq must be dropped as a replay or as
// older than the window.
func (r *Replay) AlreadyReceived(seq uint64) bool {
	if r.mostRecent >= ReplayWindowSize && seq <= r.mostRecent-ReplayWindowSize {
		return true
	}
	v := r.received[seq&(ReplayWindowSize-1)]
	return v != emptySlot && v >= seq
}

// Advance records seq as received; call it only after the packet decrypted.
func (r *Replay) Advance(seq uint64) {
	if seq > r.mostRecent {
		r.mostRecent = seq
	}
	r.received[seq&(ReplayWindowSize-1)] = seq
}

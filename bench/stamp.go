package bench

import "encoding/binary"

// StampBytes is the size of the stamp at the start of every load payload:
// the send time (8 bytes) and the client's payload sequence (8 bytes), both
// little endian. Payloads are at least this long.
const StampBytes = 16

// PutStamp writes the send time, in nanoseconds of the run's monotonic
// clock, and the per-client payload sequence into p[:StampBytes]. It panics
// if p is shorter, like binary.LittleEndian.PutUint64.
func PutStamp(p []byte, sendNanos int64, seq uint64) {
	_ = p[StampBytes-1]
	binary.LittleEndian.PutUint64(p[0:8], uint64(sendNanos))
	binary.LittleEndian.PutUint64(p[8:16], seq)
}

// ReadStamp reads a stamp written by PutStamp. ok is false if p is too short
// to hold one (a truncated or foreign payload).
func ReadStamp(p []byte) (sendNanos int64, seq uint64, ok bool) {
	if len(p) < StampBytes {
		return 0, 0, false
	}
	return int64(binary.LittleEndian.Uint64(p[0:8])), binary.LittleEndian.Uint64(p[8:16]), true
}

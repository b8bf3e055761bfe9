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

// A game-mode snapshot starts with the same 16 bytes, written by the
// server rather than the load, so the time is one both processes can read:
//
//	bytes 0-7   the tick's send time: Unix nanoseconds (CLOCK_REALTIME),
//	            read once per tick as the server starts sending it, so every
//	            snapshot of a tick carries the same time
//	bytes 8-15  the tick number: it counts tick intervals from the server's
//	            start, so a tick the server skipped (it fell more than an
//	            interval behind) is a gap every client sees as a lost
//	            snapshot
//
// both little endian; the rest of the snapshot is the server's own (netbench's
// server puts the client's latest input sequence at bytes 16-23 and fills
// the rest). That is all a load needs from another implementation's server.

// PutSnapshotStamp writes a snapshot's stamp into p[:StampBytes].
func PutSnapshotStamp(p []byte, sendUnixNanos int64, tick uint64) { PutStamp(p, sendUnixNanos, tick) }

// ReadSnapshotStamp reads a snapshot's stamp; ok is false if p is shorter
// than StampBytes.
func ReadSnapshotStamp(p []byte) (sendUnixNanos int64, tick uint64, ok bool) { return ReadStamp(p) }

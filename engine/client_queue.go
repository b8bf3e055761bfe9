package engine

import "github.com/netcode-go/netcode/codec"

// payloadQueue is the client's bounded receive queue. Payloads are copied
// into one slab allocated at construction (capacity × 1200 bytes), so
// queueing and dequeueing never allocate; a push into a full queue fails and
// the caller counts the drop, as the reference does.
type payloadQueue struct {
	data       []byte
	lens       []uint16
	seqs       []uint64
	mask       uint64
	head, tail uint64 // tail - head = length
}

// init allocates room for capacity payloads; capacity is a power of two.
func (q *payloadQueue) init(capacity int) {
	q.data = make([]byte, capacity*codec.MaxPayloadBytes)
	q.lens = make([]uint16, capacity)
	q.seqs = make([]uint64, capacity)
	q.mask = uint64(capacity - 1)
	q.head, q.tail = 0, 0
}

// push copies p (1 to 1200 bytes) and reports whether there was room.
func (q *payloadQueue) push(p []byte, seq uint64) bool {
	if q.tail-q.head == uint64(len(q.lens)) {
		return false
	}
	i := q.tail & q.mask
	off := int(i) * codec.MaxPayloadBytes
	q.lens[i] = uint16(copy(q.data[off:off+codec.MaxPayloadBytes], p))
	q.seqs[i] = seq
	q.tail++
	return true
}

// pop copies the oldest payload into dst. n is the number of bytes copied
// and size the payload's full size (larger than n if dst was too short).
func (q *payloadQueue) pop(dst []byte) (n, size int, seq uint64, ok bool) {
	if q.tail == q.head {
		return 0, 0, 0, false
	}
	i := q.head & q.mask
	off := int(i) * codec.MaxPayloadBytes
	size = int(q.lens[i])
	n = copy(dst, q.data[off:off+size])
	seq = q.seqs[i]
	q.head++
	return n, size, seq, true
}

// clear empties the queue. Old payload bytes are left in the slab; they
// are never read again.
func (q *payloadQueue) clear() { q.head, q.tail = 0, 0 }

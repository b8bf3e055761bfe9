package engine

import "github.com/netcode-go/netcode/codec"

// payloadQueue is the client's bounded receive queue. Payloads are copied
// into one slab allocated at construction (capacity × 1200 bytes), so
// queueing and dequeueing never allocate; a push into a full queue fails and
// the caller counts the drop, as the reference does. A payload longer than
// 1200 bytes (a reassembled reliable packet) takes as many entries as it
// needs, in order.
type payloadQueue struct {
	data       []byte
	lens       []uint32 // of the payload starting at the entry
	seqs       []uint64
	mask       uint64
	head, tail uint64 // tail - head = entries used
}

// init allocates room for capacity entries; capacity is a power of two.
func (q *payloadQueue) init(capacity int) {
	q.data = make([]byte, capacity*codec.MaxPayloadBytes)
	q.lens = make([]uint32, capacity)
	q.seqs = make([]uint64, capacity)
	q.mask = uint64(capacity - 1)
	q.head, q.tail = 0, 0
}

// entry returns the data of entry i.
func (q *payloadQueue) entry(i uint64) []byte {
	off := int(i&q.mask) * codec.MaxPayloadBytes
	return q.data[off : off+codec.MaxPayloadBytes]
}

// push copies p and reports whether there was room.
func (q *payloadQueue) push(p []byte, seq uint64) bool {
	k := uint64(chunks(len(p)))
	if uint64(len(q.lens))-(q.tail-q.head) < k {
		return false
	}
	for c := range k {
		copy(q.entry(q.tail+c), p[c*codec.MaxPayloadBytes:])
	}
	q.lens[q.tail&q.mask] = uint32(len(p))
	q.seqs[q.tail&q.mask] = seq
	q.tail += k
	return true
}

// pop copies the oldest payload into dst. n is the number of bytes copied
// and size the payload's full size (larger than n if dst was too short).
func (q *payloadQueue) pop(dst []byte) (n, size int, seq uint64, ok bool) {
	if q.tail == q.head {
		return 0, 0, 0, false
	}
	i := q.head & q.mask
	size = int(q.lens[i])
	seq = q.seqs[i]
	k := chunks(size)
	for c := range k {
		end := min(size-c*codec.MaxPayloadBytes, codec.MaxPayloadBytes)
		n += copy(dst[n:], q.entry(q.head + uint64(c))[:end])
	}
	q.head += uint64(k)
	return n, size, seq, true
}

// clear empties the queue. Old payload bytes are left in the slab; they
// are never read again.
func (q *payloadQueue) clear() { q.head, q.tail = 0, 0 }

package wtconn

import (
	"net/netip"
	"sync"

	"github.com/netcode-go/netcode/batchio"
)

// queue is a bounded FIFO of received datagrams. The browser's callbacks
// push, the client's ReadBatch pops; the datagrams are copied into one slab
// allocated up front, so a session that floods the page costs a bounded
// amount of memory and the surplus is dropped and counted.
type queue struct {
	mu         sync.Mutex
	slab       []byte
	lens       []int
	addrs      []netip.AddrPort
	size       int // bytes per entry
	head, tail uint64
	dropped    uint64 // pushed into a full queue
	tooLong    uint64 // longer than an entry
	notify     chan struct{}
}

func newQueue(entries, size int) *queue {
	return &queue{
		slab:   make([]byte, entries*size),
		lens:   make([]int, entries),
		addrs:  make([]netip.AddrPort, entries),
		size:   size,
		notify: make(chan struct{}, 1),
	}
}

// push copies p, from addr, into the queue and wakes a waiting reader. It
// never blocks: it runs in the browser's event callbacks.
func (q *queue) push(p []byte, addr netip.AddrPort) {
	q.mu.Lock()
	switch {
	case len(p) > q.size:
		q.tooLong++
	case q.tail-q.head == uint64(len(q.lens)):
		q.dropped++
	default:
		i := int(q.tail % uint64(len(q.lens)))
		q.lens[i] = copy(q.slab[i*q.size:(i+1)*q.size], p)
		q.addrs[i] = addr
		q.tail++
	}
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// pop fills msgs with waiting datagrams, as batchio.Conn.ReadBatch does:
// a datagram longer than a message's buffer is dropped.
func (q *queue) pop(msgs []batchio.Message) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for n < len(msgs) && q.head != q.tail {
		i := int(q.head % uint64(len(q.lens)))
		q.head++
		m := &msgs[n]
		if q.lens[i] > len(m.Buf) {
			q.tooLong++
			continue
		}
		m.N = copy(m.Buf, q.slab[i*q.size:i*q.size+q.lens[i]])
		m.Addr = q.addrs[i]
		n++
	}
	return n
}

// counts returns the drop counters.
func (q *queue) counts() (dropped, tooLong uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped, q.tooLong
}

// countTooLong counts a datagram too long to be a netcode packet, which
// the caller did not copy.
func (q *queue) countTooLong() {
	q.mu.Lock()
	q.tooLong++
	q.mu.Unlock()
}

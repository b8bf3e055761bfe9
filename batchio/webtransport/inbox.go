package webtransport

import (
	"net/netip"
	"sync"

	"github.com/netcode-go/netcode/batchio"
)

// inbox holds the datagrams received from every session and not yet read:
// a ring of fixed size, in arrival order. Each session may hold at most
// share entries, so a session that floods loses its own datagrams and
// never the others'.
type inbox struct {
	mu    sync.Mutex
	q     []inboxEntry
	head  int
	n     int
	share int
}

type inboxEntry struct {
	s *session
	b []byte
}

func newInbox(size, share int) inbox {
	return inbox{q: make([]inboxEntry, size), share: share}
}

// push queues b from s, or returns why it cannot. The inbox keeps b (the
// QUIC stack allocated it for this datagram).
func (in *inbox) push(s *session, b []byte) dropReason {
	in.mu.Lock()
	defer in.mu.Unlock()
	if s.queued >= in.share {
		return dropSessionFull
	}
	if in.n == len(in.q) {
		return dropInboxFull
	}
	i := in.head + in.n
	if i >= len(in.q) {
		i -= len(in.q)
	}
	in.q[i] = inboxEntry{s: s, b: b}
	in.n++
	s.queued++
	return dropNone
}

// pending reports whether a datagram is waiting.
func (in *inbox) pending() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.n > 0
}

// read moves waiting datagrams into msgs, in order, and returns how many
// it filled. Datagrams it drops (too long for their message's buffer, or
// of a closed session) are counted in drops and do not use a message.
func (in *inbox) read(msgs []batchio.Message, drops *[numDropReasons]uint64) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for n < len(msgs) && in.n > 0 {
		e := in.q[in.head]
		in.q[in.head] = inboxEntry{}
		in.head++
		if in.head == len(in.q) {
			in.head = 0
		}
		in.n--
		e.s.queued--
		if r := deliver(&msgs[n], e.s, e.b); r != dropNone {
			drops[r]++
			continue
		}
		n++
	}
	return n
}

// deliver is the reader's last step: it turns datagram b of session s
// into message m, or returns why it drops it. A datagram is only ever
// delivered from its session's synthetic address, never from an address
// a browser chose.
func deliver(m *batchio.Message, s *session, b []byte) dropReason {
	m.N = 0
	if s.closed.Load() {
		return dropClosed
	}
	if len(b) > len(m.Buf) {
		return dropTruncated
	}
	m.N = copy(m.Buf, b)
	m.Addr = s.addr
	m.Local = netip.Addr{}
	return dropNone
}

package batchiotest

import (
	"bytes"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

// maxConnQueue bounds the datagrams a Conn holds, pushed and unread or
// written and not taken, so a test that forgets to drain one cannot grow
// it without limit.
const maxConnQueue = 1 << 16

// Datagram is a datagram a Conn was given to send: its bytes and its
// destination.
type Datagram struct {
	Data []byte
	Addr netip.AddrPort
}

// ConnStats are a Conn's counters.
type ConnStats struct {
	ReadCalls, WriteCalls, WaitCalls, Wakes uint64
	Read                                    uint64 // datagrams returned by ReadBatch, pushed or generated
	Written                                 uint64 // datagrams WriteBatch accepted (kept, or counted only with Discard)
	// Dropped counts datagrams offered to WriteBatch and not accepted:
	// DropWrite, Refuse, WriteErr or a full outbox. Written+Dropped is
	// every datagram offered.
	Dropped   uint64
	Truncated uint64 // pushed datagrams longer than the reader's buffer, dropped
	InboxFull uint64 // pushes dropped because maxConnQueue were unread
	Queued    int    // pushed datagrams not read yet
}

// Conn is a scriptable fake batchio.Conn for tests of the code above a
// socket: the test queues datagrams for it to read (Push) or has them made
// up on the fly (Generate), takes what it wrote (Sent, Take), and sets
// knobs that make writes drop, fail or be refused and reads fail.
//
// The knob fields are read by the conn's user: set them before handing
// the conn over, or between calls when the code under test runs on the
// test's goroutine. Push, Sent, Take, Stats, Wake, Closed and Close may be
// called from any goroutine.
type Conn struct {
	// Discard counts written datagrams without keeping them, so that a
	// write allocates nothing (allocation tests).
	Discard bool
	// Refuse makes WriteBatch accept nothing: it returns 0, nil.
	Refuse bool
	// DropWrite, if set, is asked about message i of each WriteBatch call:
	// true drops it (not kept, not in the count returned) as a socket
	// drops a datagram after a hard error, and the rest still go out.
	DropWrite func(i int) bool
	// WriteErr, if set, fails every WriteBatch with it; nothing is sent.
	WriteErr error
	// ReadErr, if set, fails every ReadBatch with it; nothing is read.
	ReadErr error
	// Generate, if set, makes up datagrams once the pushed ones are read:
	// ReadBatch calls it with each remaining message's buffer until it
	// returns false; n (at most len(buf)) is the datagram's length and
	// from its source. One that never returns false is a socket under a
	// flood that never drains.
	Generate func(buf []byte) (n int, from netip.AddrPort, ok bool)
	// Wait, if set, is WaitRead on an open conn: the test decides what a
	// wait does (record the deadline, move a fake clock, push a datagram).
	Wait func(deadline time.Time) error
	// Block makes WaitRead (without a Wait hook) block as a socket's does,
	// until a datagram is pushed, Wake, Close or the deadline, for code
	// that reads on a goroutine of its own. By default it returns nil at
	// once, which suits code the test drives.
	Block bool

	local  netip.AddrPort
	park   *batchio.Parker
	closed atomic.Bool
	once   sync.Once

	mu    sync.Mutex
	in    []pushed // a ring: count datagrams from head
	head  int
	count int
	out   []Datagram
	stats ConnStats
}

// pushed is one queued datagram; its buffer is reused by later pushes, so
// a steady-state push allocates nothing.
type pushed struct {
	data []byte
	from netip.AddrPort
}

var (
	_ batchio.Conn  = (*Conn)(nil)
	_ batchio.Waker = (*Conn)(nil)
)

// NewConn returns an open Conn bound to local, with nothing queued.
func NewConn(local netip.AddrPort) *Conn {
	return &Conn{local: local, park: batchio.NewParker()}
}

// Push queues a copy of data from the address from, to be read by a
// later ReadBatch. A push onto 65,536 unread datagrams is dropped and
// counted (ConnStats.InboxFull).
func (c *Conn) Push(from netip.AddrPort, data []byte) {
	c.mu.Lock()
	if c.count == maxConnQueue {
		c.stats.InboxFull++
		c.mu.Unlock()
		return
	}
	if c.count == len(c.in) {
		grown := make([]pushed, max(16, 2*len(c.in)))
		for i := range c.count {
			grown[i] = c.in[(c.head+i)%len(c.in)]
		}
		c.in, c.head = grown, 0
	}
	p := &c.in[(c.head+c.count)%len(c.in)]
	p.data = append(p.data[:0], data...)
	p.from = from
	c.count++
	c.mu.Unlock()
	c.park.Notify()
}

// Sent returns, and forgets, every datagram written and not taken yet, in
// the order written.
func (c *Conn) Sent() []Datagram {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.out
	c.out = nil
	return out
}

// Take returns, and forgets, the datagrams written to to and not taken
// yet, in the order written; those to other addresses stay.
func (c *Conn) Take(to netip.AddrPort) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var got [][]byte
	keep := c.out[:0]
	for _, d := range c.out {
		if d.Addr == to {
			got = append(got, d.Data)
		} else {
			keep = append(keep, d)
		}
	}
	clear(c.out[len(keep):])
	c.out = keep
	return got
}

// Stats returns the counters.
func (c *Conn) Stats() ConnStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Queued = c.count
	return s
}

// Closed reports whether Close was called.
func (c *Conn) Closed() bool { return c.closed.Load() }

// ReadBatch returns pushed datagrams, oldest first, then generated ones.
// A pushed datagram longer than the next message's buffer is dropped and
// counted, as a socket drops a truncated one.
func (c *Conn) ReadBatch(msgs []batchio.Message) (int, error) {
	if c.closed.Load() {
		return 0, batchio.ErrClosed
	}
	c.mu.Lock()
	c.stats.ReadCalls++
	if c.ReadErr != nil {
		c.mu.Unlock()
		return 0, c.ReadErr
	}
	n := 0
	for n < len(msgs) && c.count > 0 {
		p := &c.in[c.head]
		c.head = (c.head + 1) % len(c.in)
		c.count--
		if len(p.data) > len(msgs[n].Buf) {
			c.stats.Truncated++
			continue
		}
		msgs[n].N = copy(msgs[n].Buf, p.data)
		msgs[n].Addr = p.from
		n++
	}
	c.mu.Unlock()
	// Generate runs unlocked: it may push.
	for c.Generate != nil && n < len(msgs) {
		size, from, ok := c.Generate(msgs[n].Buf)
		if !ok {
			break
		}
		msgs[n].N, msgs[n].Addr = min(max(size, 0), len(msgs[n].Buf)), from
		n++
	}
	c.mu.Lock()
	c.stats.Read += uint64(n)
	c.mu.Unlock()
	return n, nil
}

// WriteBatch keeps a copy of each datagram (unless Discard) and returns
// how many it accepted; the knobs drop, refuse or fail them.
func (c *Conn) WriteBatch(msgs []batchio.Message) (int, error) {
	if c.closed.Load() {
		return 0, batchio.ErrClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.WriteCalls++
	if c.WriteErr != nil || c.Refuse {
		c.stats.Dropped += uint64(len(msgs))
		return 0, c.WriteErr
	}
	sent := 0
	for i := range msgs {
		if c.DropWrite != nil && c.DropWrite(i) {
			c.stats.Dropped++
			continue
		}
		if c.Discard {
			sent++
			continue
		}
		if len(c.out) == maxConnQueue {
			// A full outbox ends the write short, as a full socket does.
			c.stats.Dropped += uint64(len(msgs) - i)
			break
		}
		m := &msgs[i]
		c.out = append(c.out, Datagram{Data: bytes.Clone(m.Buf[:m.N]), Addr: m.Addr})
		sent++
	}
	c.stats.Written += uint64(sent)
	return sent, nil
}

// WaitRead calls the Wait hook, or returns nil at once, or with Block
// waits for a push, Wake, Close or the deadline. After Close it returns
// batchio.ErrClosed.
func (c *Conn) WaitRead(deadline time.Time) error {
	if c.closed.Load() {
		return batchio.ErrClosed
	}
	c.mu.Lock()
	c.stats.WaitCalls++
	c.mu.Unlock()
	if c.Wait != nil {
		return c.Wait(deadline)
	}
	if !c.Block || c.Generate != nil {
		return nil
	}
	_, err := c.park.Wait(deadline, c.waiting, nil)
	return err
}

// waiting reports whether pushed datagrams wait to be read.
func (c *Conn) waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count > 0
}

// Wake counts the call and ends a blocking WaitRead in progress (or makes
// the next one return at once).
func (c *Conn) Wake() {
	c.mu.Lock()
	c.stats.Wakes++
	c.mu.Unlock()
	c.park.Wake()
}

// LocalAddr returns the address given to NewConn.
func (c *Conn) LocalAddr() netip.AddrPort { return c.local }

// Close marks the conn closed (reads, writes and waits then return
// batchio.ErrClosed) and ends a blocking WaitRead. Queued and written
// datagrams stay for the test to inspect.
func (c *Conn) Close() error {
	c.once.Do(func() {
		c.closed.Store(true)
		c.park.Close()
	})
	return nil
}

package batchiotest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

// SimConfig describes the network a SimConn imitates on its sending side.
// The zero value is a perfect network.
type SimConfig struct {
	// Latency delays every datagram; Jitter adds a uniformly drawn delay in
	// [-Jitter, +Jitter] (never sending before now), which also reorders.
	Latency, Jitter time.Duration
	// Loss is the probability that a datagram is dropped; Duplicate the
	// probability that one not dropped is delivered a second time, with
	// its own delay.
	Loss, Duplicate float64
	// Seed makes the simulation repeatable.
	Seed uint64
	// MaxQueued bounds the datagrams in flight (default 8192); more are
	// dropped and counted, like a full router queue.
	MaxQueued int
	// MaxDatagram is the longest datagram accepted (default 1500).
	MaxDatagram int
}

const (
	defaultMaxQueued = 8192
	maxMaxQueued     = 1 << 20
	// simBatch is how many due datagrams go to the wrapped conn per
	// WriteBatch call.
	simBatch = 64
	// simStream picks the PCG stream; any constant works, it only has to
	// be the same on every run.
	simStream = 0x9e3779b97f4a7c15
	// maxJitter keeps the jitter draw's range (2*Jitter+1) from overflowing.
	maxJitter = time.Duration(math.MaxInt64 / 4)
)

// Validate reports every out-of-range field.
func (c SimConfig) Validate() error {
	var errs []error
	if c.Latency < 0 {
		errs = append(errs, fmt.Errorf("latency %v is negative", c.Latency))
	}
	if c.Jitter < 0 || c.Jitter > maxJitter {
		errs = append(errs, fmt.Errorf("jitter %v is not 0 to %v", c.Jitter, maxJitter))
	}
	if !probability(c.Loss) {
		errs = append(errs, fmt.Errorf("loss %v is not a probability in [0, 1]", c.Loss))
	}
	if !probability(c.Duplicate) {
		errs = append(errs, fmt.Errorf("duplicate %v is not a probability in [0, 1]", c.Duplicate))
	}
	if c.MaxQueued < 0 || c.MaxQueued > maxMaxQueued {
		errs = append(errs, fmt.Errorf("max queued %d is not 0 (default) to %d", c.MaxQueued, maxMaxQueued))
	}
	if c.MaxDatagram < 0 || c.MaxDatagram > maxUDPDatagram {
		errs = append(errs, fmt.Errorf("max datagram %d is not 0 (default) to %d", c.MaxDatagram, maxUDPDatagram))
	}
	if len(errs) > 0 {
		return fmt.Errorf("batchiotest: bad simulator config: %w", errors.Join(errs...))
	}
	return nil
}

// probability is false for NaN as well as for values outside [0, 1].
func probability(p float64) bool { return p >= 0 && p <= 1 && !math.IsNaN(p) }

// SimStats are a SimConn's counters, readable from any goroutine.
type SimStats struct {
	Accepted   uint64 // datagrams WriteBatch took (each counted once, before loss)
	Lost       uint64 // dropped by the Loss draw
	Duplicated uint64 // second copies queued
	QueueFull  uint64 // copies dropped because MaxQueued were in flight
	Invalid    uint64 // writes refused: N out of range or longer than MaxDatagram
	Sent       uint64 // copies the wrapped conn accepted
	Unsent     uint64 // copies the wrapped conn refused or failed to send
	Queued     int    // copies in flight now
}

// SimConn wraps a Conn and imitates loss, latency, jitter and duplication
// on what it sends; reads go straight to the wrapped conn. Wrap both ends
// to simulate both directions.
//
// It is deterministic: every random draw comes from a PCG seeded with
// Seed, and the only time it looks at is its now function, read once per
// call; so the same seed, calls and clock readings give the same
// deliveries, and tests can run it on a fake clock.
//
// Delayed datagrams are handed to the wrapped conn whenever the owner calls
// ReadBatch, WriteBatch or WaitRead, and WaitRead never sleeps past the
// next one, so they go out on time even while the owner is idle.
type SimConn struct {
	inner batchio.Conn
	cfg   SimConfig
	now   func() time.Time
	rng   *rand.Rand

	// Datagrams in flight live in entries, which only grows (to at most
	// MaxQueued) and whose buffers are reused through free; heap orders
	// their indices by due time.
	entries []simEntry
	heap    []int32
	free    []int32
	seq     uint64

	out    [simBatch]batchio.Message // the batch handed to the wrapped conn
	outIdx [simBatch]int32           // the entries behind out, freed after the write

	closed atomic.Bool
	stats  struct {
		accepted, lost, duplicated, queueFull, invalid, sent, unsent atomic.Uint64
		queued                                                       atomic.Int64
	}
}

type simEntry struct {
	due  time.Time
	seq  uint64 // breaks ties in due time by queueing order, so order is deterministic
	to   netip.AddrPort
	buf  []byte
	size int
}

var (
	_ batchio.Conn    = (*SimConn)(nil)
	_ batchio.Wrapper = (*SimConn)(nil)
	_ batchio.Waker   = (*SimConn)(nil)
)

// NewSimConn wraps inner. now is the clock the delays are measured on:
// time.Now (used when now is nil) or a fake clock in tests. Deadlines given
// to WaitRead are wall-clock times, as for every Conn.
func NewSimConn(inner batchio.Conn, cfg SimConfig, now func() time.Time) (*SimConn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if inner == nil {
		return nil, errors.New("batchiotest: NewSimConn needs a conn to wrap")
	}
	if now == nil {
		now = time.Now
	}
	if cfg.MaxQueued == 0 {
		cfg.MaxQueued = defaultMaxQueued
	}
	if cfg.MaxDatagram == 0 {
		cfg.MaxDatagram = defaultMaxDatagram
	}
	return &SimConn{
		inner: inner,
		cfg:   cfg,
		now:   now,
		rng:   rand.New(rand.NewPCG(cfg.Seed, simStream)),
	}, nil
}

// Stats returns the simulator's counters.
func (s *SimConn) Stats() SimStats {
	return SimStats{
		Accepted: s.stats.accepted.Load(), Lost: s.stats.lost.Load(),
		Duplicated: s.stats.duplicated.Load(), QueueFull: s.stats.queueFull.Load(),
		Invalid: s.stats.invalid.Load(), Sent: s.stats.sent.Load(),
		Unsent: s.stats.unsent.Load(), Queued: int(s.stats.queued.Load()),
	}
}

// Unwrap returns the wrapped conn.
func (s *SimConn) Unwrap() batchio.Conn { return s.inner }

// Wake wakes the wrapped conn, if it can be woken (batchio.Waker): a
// WaitRead in progress returns early, which the Conn contract allows.
func (s *SimConn) Wake() { wakeInner(s.inner) }

// LocalAddr returns the wrapped conn's address.
func (s *SimConn) LocalAddr() netip.AddrPort { return s.inner.LocalAddr() }

// Close closes the wrapped conn. Datagrams in flight are lost.
func (s *SimConn) Close() error {
	s.closed.Store(true)
	return s.inner.Close()
}

// ReadBatch sends what is due, then reads from the wrapped conn.
func (s *SimConn) ReadBatch(msgs []batchio.Message) (int, error) {
	if s.closed.Load() {
		return 0, batchio.ErrClosed
	}
	if err := s.flush(s.now()); err != nil {
		return 0, err
	}
	return s.inner.ReadBatch(msgs)
}

// WriteBatch decides each datagram's fate, queues copies of the survivors
// and sends what is due (with no latency, that is all of them). Lost and
// queue-full datagrams count as sent, since the network dropped them; it
// returns how many messages were valid.
func (s *SimConn) WriteBatch(msgs []batchio.Message) (int, error) {
	if s.closed.Load() {
		return 0, batchio.ErrClosed
	}
	now := s.now()
	accepted := 0
	for i := range msgs {
		m := &msgs[i]
		if m.N <= 0 || m.N > len(m.Buf) || m.N > s.cfg.MaxDatagram {
			s.stats.invalid.Add(1)
			continue
		}
		accepted++
		// Both draws are made for every datagram so that one datagram's
		// fate does not shift the random stream of the ones after it.
		lost := s.rng.Float64() < s.cfg.Loss
		dup := s.rng.Float64() < s.cfg.Duplicate
		if lost {
			s.stats.lost.Add(1)
			continue
		}
		s.enqueue(now, m)
		if dup {
			s.stats.duplicated.Add(1)
			s.enqueue(now, m)
		}
	}
	s.stats.accepted.Add(uint64(accepted))
	if err := s.flush(now); err != nil {
		return accepted, err
	}
	return accepted, nil
}

// WaitRead sends what is due, then waits on the wrapped conn until a
// datagram may be ready, the deadline, or the next queued datagram is due,
// whichever is first. In the last case it sends that datagram and returns
// nil early, which the Conn contract allows.
func (s *SimConn) WaitRead(deadline time.Time) error {
	if s.closed.Load() {
		return batchio.ErrClosed
	}
	now := s.now()
	if err := s.flush(now); err != nil {
		return err
	}
	if len(s.heap) == 0 {
		return s.inner.WaitRead(deadline)
	}
	// Due times are on the simulator's clock, the wrapped conn waits on the
	// wall clock: wait for the same duration.
	next := time.Now().Add(s.entries[s.heap[0]].due.Sub(now))
	if !deadline.IsZero() && deadline.Before(next) {
		return s.inner.WaitRead(deadline)
	}
	if err := s.inner.WaitRead(next); err != nil {
		return err
	}
	return s.flush(s.now())
}

// delay draws one datagram's delay.
func (s *SimConn) delay() time.Duration {
	d := s.cfg.Latency
	if j := int64(s.cfg.Jitter); j > 0 {
		d += time.Duration(s.rng.Int64N(2*j+1) - j)
	}
	return max(d, 0)
}

// enqueue copies m into a free entry and pushes it on the heap.
func (s *SimConn) enqueue(now time.Time, m *batchio.Message) {
	due := now.Add(s.delay()) // drawn even if the queue is full, for a stable stream
	if len(s.heap) == s.cfg.MaxQueued {
		s.stats.queueFull.Add(1)
		return
	}
	var i int32
	if k := len(s.free); k > 0 {
		i, s.free = s.free[k-1], s.free[:k-1]
	} else {
		// The first time the queue reaches this depth: the entry and its
		// buffer are kept for reuse.
		i = int32(len(s.entries))
		s.entries = append(s.entries, simEntry{buf: make([]byte, s.cfg.MaxDatagram)})
	}
	e := &s.entries[i]
	e.due, e.seq, e.to = due, s.seq, m.Addr
	e.size = copy(e.buf, m.Buf[:m.N])
	s.seq++
	s.heap = append(s.heap, i)
	s.up(len(s.heap) - 1)
	s.stats.queued.Add(1)
}

// flush hands every datagram due by now to the wrapped conn, in order.
func (s *SimConn) flush(now time.Time) error {
	for len(s.heap) > 0 && !s.entries[s.heap[0]].due.After(now) {
		k := 0
		for k < simBatch && len(s.heap) > 0 && !s.entries[s.heap[0]].due.After(now) {
			i := s.pop()
			e := &s.entries[i]
			s.out[k] = batchio.Message{Buf: e.buf, N: e.size, Addr: e.to}
			s.outIdx[k] = i
			k++
		}
		n, err := s.inner.WriteBatch(s.out[:k])
		// The entries are free only now: the wrapped conn may read their
		// buffers until WriteBatch returns.
		s.free = append(s.free, s.outIdx[:k]...)
		s.stats.queued.Add(-int64(k))
		s.stats.sent.Add(uint64(n))
		s.stats.unsent.Add(uint64(k - n))
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *SimConn) less(a, b int32) bool {
	x, y := &s.entries[a], &s.entries[b]
	if x.due.Equal(y.due) {
		return x.seq < y.seq
	}
	return x.due.Before(y.due)
}

func (s *SimConn) up(j int) {
	h := s.heap
	for j > 0 {
		p := (j - 1) / 2
		if !s.less(h[j], h[p]) {
			return
		}
		h[j], h[p] = h[p], h[j]
		j = p
	}
}

// pop removes and returns the entry due first.
func (s *SimConn) pop() int32 {
	h := s.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	s.heap = h
	for j := 0; ; {
		l, r, m := 2*j+1, 2*j+2, j
		if l < last && s.less(h[l], h[m]) {
			m = l
		}
		if r < last && s.less(h[r], h[m]) {
			m = r
		}
		if m == j {
			return top
		}
		h[j], h[m] = h[m], h[j]
		j = m
	}
}

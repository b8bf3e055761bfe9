package batchiotest

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

// MemConfig configures a MemNetwork. Zero fields take their defaults.
type MemConfig struct {
	// InboxSize is how many datagrams each conn holds unread before
	// arrivals are dropped, like a full socket buffer (default 1024).
	InboxSize int
	// MaxDatagram is the longest datagram the network carries (default
	// 1500); longer writes are refused.
	MaxDatagram int
}

const (
	defaultInboxSize   = 1024
	defaultMaxDatagram = 1500
	maxUDPDatagram     = 65535
	// firstMemPort is where port 0 assignments start: the IANA ephemeral
	// range, so assigned ports do not collide with fixed ones tests use.
	firstMemPort = 49152
)

// MemNetwork is an in-memory datagram network for tests: conns listen on
// any address (IPv4 or IPv6, routable or not) and datagrams are copied
// straight into the destination's inbox. It is deterministic apart from
// goroutine scheduling and has no latency or loss of its own; wrap a conn in
// a SimConn for those.
type MemNetwork struct {
	cfg MemConfig

	mu       sync.RWMutex
	conns    map[netip.AddrPort]*MemConn
	nextPort uint16
}

// NewMemNetwork returns an empty network.
func NewMemNetwork(cfg MemConfig) (*MemNetwork, error) {
	if cfg.InboxSize < 0 || cfg.MaxDatagram < 0 {
		return nil, fmt.Errorf("batchiotest: memory network inbox size %d, max datagram %d; want non-negative values", cfg.InboxSize, cfg.MaxDatagram)
	}
	if cfg.InboxSize == 0 {
		cfg.InboxSize = defaultInboxSize
	}
	if cfg.MaxDatagram == 0 {
		cfg.MaxDatagram = defaultMaxDatagram
	}
	return &MemNetwork{cfg: cfg, conns: make(map[netip.AddrPort]*MemConn), nextPort: firstMemPort}, nil
}

// memKey normalises an address so that an IPv4 address and its IPv4-mapped
// IPv6 form name the same conn, as they do for a real IPv4 socket.
func memKey(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// Listen binds a conn to addr. Port 0 picks a free port; an address already
// bound is an error.
func (nw *MemNetwork) Listen(addr netip.AddrPort) (*MemConn, error) {
	if !addr.Addr().IsValid() {
		return nil, fmt.Errorf("batchiotest: listen address %v is not valid", addr)
	}
	addr = memKey(addr)
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if addr.Port() == 0 {
		found := false
		for range 1 << 16 {
			p := nw.nextPort
			nw.nextPort++
			if nw.nextPort == 0 {
				nw.nextPort = 1
			}
			if _, taken := nw.conns[netip.AddrPortFrom(addr.Addr(), p)]; !taken && p != 0 {
				addr = netip.AddrPortFrom(addr.Addr(), p)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("batchiotest: no free port on %v", addr.Addr())
		}
	} else if _, taken := nw.conns[addr]; taken {
		return nil, fmt.Errorf("batchiotest: listen %v: address already in use", addr)
	}
	c := &MemConn{
		nw:    nw,
		local: addr,
		inbox: make([]memSlot, nw.cfg.InboxSize),
		park:  batchio.NewParker(),
	}
	nw.conns[addr] = c
	return c, nil
}

// memSlot is one inbox entry. Its buffer is allocated the first time the
// slot is used and then reused, so an idle conn costs little memory and a
// busy one allocates nothing in steady state.
type memSlot struct {
	buf  []byte
	n    int
	from netip.AddrPort
}

// MemStats are a MemConn's counters, readable from any goroutine.
type MemStats struct {
	Sent      uint64 // datagrams handed to the network (including those then dropped)
	Received  uint64 // datagrams returned by ReadBatch
	NoRoute   uint64 // sent to an address nobody listens on
	InboxFull uint64 // arrivals dropped because the inbox was full
	Truncated uint64 // arrivals dropped because the reader's buffer was too short
	Invalid   uint64 // writes refused: N out of range, too long, or no address
}

// MemConn is a conn on a MemNetwork. Like any batchio.Conn it is read,
// written and waited on by one goroutine at a time; Wake, Stats and Close
// may be called from any.
type MemConn struct {
	nw    *MemNetwork
	local netip.AddrPort
	park  *batchio.Parker

	// The inbox is a ring written by any sender and read by the owner.
	mu    sync.Mutex
	inbox []memSlot
	head  int // index of the oldest datagram
	count int // datagrams waiting

	closeOnce sync.Once
	closed    atomic.Bool
	stats     struct {
		sent, received, noRoute, inboxFull, truncated, invalid atomic.Uint64
	}
}

var (
	_ batchio.Conn  = (*MemConn)(nil)
	_ batchio.Waker = (*MemConn)(nil)
)

// LocalAddr returns the bound address (IPv4-mapped addresses are unmapped).
func (c *MemConn) LocalAddr() netip.AddrPort { return c.local }

// Stats returns the conn's counters.
func (c *MemConn) Stats() MemStats {
	return MemStats{
		Sent: c.stats.sent.Load(), Received: c.stats.received.Load(),
		NoRoute: c.stats.noRoute.Load(), InboxFull: c.stats.inboxFull.Load(),
		Truncated: c.stats.truncated.Load(), Invalid: c.stats.invalid.Load(),
	}
}

// WriteBatch copies each datagram into its destination's inbox. Datagrams
// to an unbound address or a full inbox are lost, as on a real network, and
// still count as sent; empty, out-of-range or over-long messages and
// invalid addresses are refused and not counted.
func (c *MemConn) WriteBatch(msgs []batchio.Message) (int, error) {
	if c.closed.Load() {
		return 0, batchio.ErrClosed
	}
	// The read lock is held for the batch so a destination cannot be
	// unbound halfway through a delivery; a concurrent Close waits.
	c.nw.mu.RLock()
	defer c.nw.mu.RUnlock()
	sent := 0
	for i := range msgs {
		m := &msgs[i]
		if m.N <= 0 || m.N > len(m.Buf) || m.N > c.nw.cfg.MaxDatagram || !m.Addr.Addr().IsValid() {
			c.stats.invalid.Add(1)
			continue
		}
		sent++
		dst := c.nw.conns[memKey(m.Addr)]
		if dst == nil {
			c.stats.noRoute.Add(1)
			continue
		}
		dst.deliver(m.Buf[:m.N], c.local, c.nw.cfg.MaxDatagram)
	}
	c.stats.sent.Add(uint64(sent))
	return sent, nil
}

// deliver copies b into the inbox, or drops it if the inbox is full.
func (c *MemConn) deliver(b []byte, from netip.AddrPort, maxDatagram int) {
	c.mu.Lock()
	if c.count == len(c.inbox) {
		c.mu.Unlock()
		c.stats.inboxFull.Add(1)
		return
	}
	s := &c.inbox[(c.head+c.count)%len(c.inbox)]
	if s.buf == nil {
		s.buf = make([]byte, maxDatagram)
	}
	s.n = copy(s.buf, b)
	s.from = from
	c.count++
	// WaitRead returns at once while the inbox is non-empty, so only the
	// arrival that makes it non-empty needs to wake the owner.
	first := c.count == 1
	c.mu.Unlock()
	if first {
		c.park.Notify()
	}
}

// ReadBatch moves waiting datagrams into msgs without blocking. A datagram
// longer than the next message's buffer is dropped and counted, and does
// not use up that message.
func (c *MemConn) ReadBatch(msgs []batchio.Message) (int, error) {
	if c.closed.Load() {
		return 0, batchio.ErrClosed
	}
	got := 0
	c.mu.Lock()
	for c.count > 0 && got < len(msgs) {
		s := &c.inbox[c.head]
		c.head = (c.head + 1) % len(c.inbox)
		c.count--
		if s.n > len(msgs[got].Buf) {
			c.stats.truncated.Add(1)
			continue
		}
		msgs[got].N = copy(msgs[got].Buf, s.buf[:s.n])
		msgs[got].Addr = s.from
		got++
	}
	if c.count == 0 {
		// Restart at the front: a conn that keeps up then only ever uses
		// (and allocates buffers for) the first few slots.
		c.head = 0
	}
	c.mu.Unlock()
	c.stats.received.Add(uint64(got))
	return got, nil
}

// WaitRead blocks until a datagram arrives, the deadline passes, Wake is
// called or the conn is closed.
func (c *MemConn) WaitRead(deadline time.Time) error {
	_, err := c.park.Wait(deadline, c.waiting, nil)
	return err
}

// waiting reports whether the inbox holds datagrams.
func (c *MemConn) waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count > 0
}

// Wake makes a WaitRead in progress, or the next one, return promptly.
func (c *MemConn) Wake() { c.park.Wake() }

// Close unbinds the address (it can be listened on again) and wakes a
// blocked WaitRead. Datagrams still in the inbox are discarded.
func (c *MemConn) Close() error {
	c.closeOnce.Do(func() {
		c.nw.mu.Lock()
		if c.nw.conns[c.local] == c {
			delete(c.nw.conns, c.local)
		}
		c.nw.mu.Unlock()
		c.closed.Store(true)
		c.park.Close()
	})
	return nil
}

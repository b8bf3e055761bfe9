package batchio

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// udpLimits are the portable conn's own bounds: fixed for Listen, varied
// by tests. Zero fields take their defaults.
type udpLimits struct {
	// inbox is how many received datagrams wait for ReadBatch before
	// arrivals are dropped (default 1024).
	inbox int
	// maxDatagram is the longest datagram received (default 1500); longer
	// ones are dropped.
	maxDatagram int
}

const (
	defaultInboxSize   = 1024
	defaultMaxDatagram = 1500
	maxInboxSize       = 1 << 20
	maxUDPDatagram     = 65535
	// readErrorPause is how long the reader rests after a run of failed
	// reads, so a persistently failing socket cannot spin a CPU.
	readErrorPause = time.Millisecond
	readErrorRun   = 8
)

func (l *udpLimits) validate() error {
	if l.inbox == 0 {
		l.inbox = defaultInboxSize
	}
	if l.maxDatagram == 0 {
		l.maxDatagram = defaultMaxDatagram
	}
	if l.inbox < 1 || l.inbox > maxInboxSize {
		return fmt.Errorf("batchio: inbox size %d; want 1 to %d", l.inbox, maxInboxSize)
	}
	if l.maxDatagram < 1 || l.maxDatagram > maxUDPDatagram {
		return fmt.Errorf("batchio: max datagram %d; want 1 to %d", l.maxDatagram, maxUDPDatagram)
	}
	return nil
}

// udpConn is the UDP socket Listen opens outside Linux (on Linux it opens
// an mmsgConn, which moves a batch per system call); it works wherever Go
// does. Go's net.UDPConn cannot read without blocking, so one reader
// goroutine per socket blocks in ReadFromUDPAddrPort, straight into the
// free slot of a single-producer single-consumer ring of preallocated
// buffers, and ReadBatch drains the ring. Neither side takes a lock or
// allocates per datagram. Arrivals dropped because the ring was full are
// counted but not reported in Stats.
type udpConn struct {
	udp   *net.UDPConn
	ipv4  bool
	local netip.AddrPort
	park  *Parker

	// The ring: the reader fills slots[tail%len], publishes by storing
	// tail+1; the owner copies out slots[head%len], frees by storing head.
	// Indices only grow, so tail-head is the number waiting.
	slots   []udpSlot
	head    atomic.Uint64
	tail    atomic.Uint64
	scratch []byte // the reader's landing place while the ring is full

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool
	reader    sync.WaitGroup
	stats     struct {
		recvCalls, recv, sendCalls, sent, sendDropped atomic.Uint64
		inboxFull, truncated, readErrors, waits       atomic.Uint64
	}
	recvBufWant, sendBufWant int
	limitErr                 error // why Config.SourceLimit is not applied
}

// udpSlot is one ring entry. Its buffer has one byte more than
// maxDatagram, so a read that fills it shows the datagram was too long.
type udpSlot struct {
	buf  []byte
	n    int
	from netip.AddrPort
}

var (
	_ Conn        = (*udpConn)(nil)
	_ Waker       = (*udpConn)(nil)
	_ StatsReader = (*udpConn)(nil)
)

// listenUDP opens a UDP socket on addr. An IPv4 (or IPv4-mapped) address
// opens an IPv4 socket; an IPv6 address an IPv6-only one. Of cfg only the
// buffer sizes apply.
func listenUDP(addr netip.AddrPort, cfg Config, lim udpLimits) (*udpConn, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := lim.validate(); err != nil {
		return nil, err
	}
	if !addr.IsValid() {
		return nil, fmt.Errorf("batchio: listen address %v is not valid", addr)
	}
	ipv4 := addr.Addr().Unmap().Is4()
	network := "udp6" // Go makes udp6 sockets IPv6-only
	if ipv4 {
		network = "udp4"
		addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	}
	udp, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return nil, fmt.Errorf("batchio: listen %v: %w", addr, err)
	}
	// Best effort: a smaller buffer only means more drops under bursts.
	if cfg.RecvBuffer > 0 {
		_ = udp.SetReadBuffer(cfg.RecvBuffer)
	}
	if cfg.SendBuffer > 0 {
		_ = udp.SetWriteBuffer(cfg.SendBuffer)
	}
	local := udp.LocalAddr().(*net.UDPAddr).AddrPort()
	if ipv4 {
		local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	}
	c := &udpConn{
		udp:         udp,
		ipv4:        ipv4,
		local:       local,
		park:        NewParker(),
		slots:       make([]udpSlot, lim.inbox),
		scratch:     make([]byte, lim.maxDatagram+1),
		recvBufWant: max(cfg.RecvBuffer, 0),
		sendBufWant: max(cfg.SendBuffer, 0),
	}
	for i := range c.slots {
		c.slots[i].buf = make([]byte, lim.maxDatagram+1)
	}
	c.reader.Add(1)
	go c.readLoop()
	return c, nil
}

// readLoop is the reader goroutine. It exits when Close closes the socket.
func (c *udpConn) readLoop() {
	defer c.reader.Done()
	size := uint64(len(c.slots))
	tail := c.tail.Load()
	failures := 0
	for {
		// Read straight into the next slot if it is free. If the ring is
		// full, read anyway (the datagram is gone from the socket either
		// way) and keep it if the owner made room meanwhile.
		full := tail-c.head.Load() == size
		buf := c.slots[tail%size].buf
		if full {
			buf = c.scratch
		}
		n, from, err := c.udp.ReadFromUDPAddrPort(buf)
		c.stats.recvCalls.Add(1)
		if err != nil {
			if c.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// For example an ICMP port unreachable reported on Windows:
			// the socket is still good.
			c.stats.readErrors.Add(1)
			if failures++; failures >= readErrorRun {
				failures = 0
				time.Sleep(readErrorPause)
			}
			continue
		}
		failures = 0
		if n == len(buf) {
			c.stats.truncated.Add(1)
			continue
		}
		if full {
			if tail-c.head.Load() == size {
				c.stats.inboxFull.Add(1)
				continue
			}
			copy(c.slots[tail%size].buf, c.scratch[:n])
		}
		if c.ipv4 {
			from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		}
		s := &c.slots[tail%size]
		s.n, s.from = n, from
		tail++
		c.tail.Store(tail)
		c.park.Notify()
	}
}

// LocalAddr returns the bound address.
func (c *udpConn) LocalAddr() netip.AddrPort { return c.local }

// Stats returns the socket's counters. The buffer sizes granted are not
// known (0).
func (c *udpConn) Stats() Stats {
	return Stats{
		RecvCalls: c.stats.recvCalls.Load(), RecvPackets: c.stats.recv.Load(),
		SendCalls: c.stats.sendCalls.Load(), SendPackets: c.stats.sent.Load(),
		SendDropped: c.stats.sendDropped.Load(), Truncated: c.stats.truncated.Load(),
		Waits:          c.stats.waits.Load(),
		RecvBufferWant: c.recvBufWant, SendBufferWant: c.sendBufWant,
		SourceLimitErr: c.limitErr,
	}
}

// Wake makes a WaitRead in progress, or the next one, return promptly,
// from any goroutine.
func (c *udpConn) Wake() { c.park.Wake() }

// ReadBatch copies datagrams the reader has queued into msgs without
// blocking. A datagram longer than the next message's buffer is dropped
// and counted, and does not use up that message.
func (c *udpConn) ReadBatch(msgs []Message) (int, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	size := uint64(len(c.slots))
	head, tail := c.head.Load(), c.tail.Load()
	got := 0
	for head != tail && got < len(msgs) {
		s := &c.slots[head%size]
		head++
		if s.n > len(msgs[got].Buf) {
			c.stats.truncated.Add(1)
			continue
		}
		msgs[got].N = copy(msgs[got].Buf, s.buf[:s.n])
		msgs[got].Addr = s.from
		got++
	}
	c.head.Store(head)
	c.stats.recv.Add(uint64(got))
	return got, nil
}

// WaitRead blocks until the reader queues a datagram, the deadline
// passes, Wake is called or the socket is closed.
func (c *udpConn) WaitRead(deadline time.Time) error {
	c.stats.waits.Add(1)
	_, err := c.park.Wait(deadline, c.waiting, nil)
	return err
}

// waiting reports whether the reader has queued datagrams.
func (c *udpConn) waiting() bool { return c.tail.Load() != c.head.Load() }

// WriteBatch sends each message with one system call. An IPv4 socket
// unmaps IPv4-mapped destinations; a destination of the other family, a
// bad message or a datagram the system refuses is counted and skipped, as
// the Linux socket does. It returns how many the system accepted.
func (c *udpConn) WriteBatch(msgs []Message) (int, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	sent, dropped := 0, 0
	for i := range msgs {
		m := &msgs[i]
		to, ok := c.destination(m.Addr)
		if !ok || m.N <= 0 || m.N > len(m.Buf) {
			dropped++
			continue
		}
		c.stats.sendCalls.Add(1)
		if _, err := c.udp.WriteToUDPAddrPort(m.Buf[:m.N], to); err != nil {
			if errors.Is(err, net.ErrClosed) {
				c.count(sent, dropped)
				return sent, ErrClosed
			}
			dropped++
			continue
		}
		sent++
	}
	c.count(sent, dropped)
	return sent, nil
}

func (c *udpConn) count(sent, dropped int) {
	c.stats.sent.Add(uint64(sent))
	c.stats.sendDropped.Add(uint64(dropped))
}

// destination checks the address family before the system call: Go
// reports a mismatch with an allocated error, and a datagram that cannot
// be sent should cost nothing.
func (c *udpConn) destination(a netip.AddrPort) (netip.AddrPort, bool) {
	ip := a.Addr()
	if a.Port() == 0 {
		return a, false
	}
	if c.ipv4 {
		ip = ip.Unmap()
		return netip.AddrPortFrom(ip, a.Port()), ip.Is4()
	}
	return a, ip.Is6() && !ip.Is4In6()
}

// Close closes the socket, wakes a blocked WaitRead and returns once the
// reader goroutine has exited, so no goroutine outlives the conn.
// Concurrent and repeated calls wait for the first to finish.
func (c *udpConn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.park.Close()
		c.closeErr = c.udp.Close()
		c.reader.Wait()
	})
	return c.closeErr
}

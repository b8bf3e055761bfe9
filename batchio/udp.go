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

// UDPConfig configures a portable UDP socket. Zero fields take their
// defaults.
type UDPConfig struct {
	// RecvBuffer and SendBuffer are the socket buffer sizes to ask for
	// (default 4 MiB each; negative leaves the system default). They are
	// best effort: systems cap them silently.
	RecvBuffer, SendBuffer int
	// InboxSize is how many received datagrams wait for ReadBatch before
	// arrivals are dropped (default 1024).
	InboxSize int
	// MaxDatagram is the longest datagram received (default 1500); longer
	// ones are dropped.
	MaxDatagram int
}

const (
	maxInboxSize   = 1 << 20
	maxUDPDatagram = 65535
	// readErrorPause is how long the reader rests after a run of failed
	// reads, so a persistently failing socket cannot spin a CPU.
	readErrorPause = time.Millisecond
	readErrorRun   = 8
)

func (c *UDPConfig) validate() error {
	if c.InboxSize == 0 {
		c.InboxSize = defaultInboxSize
	}
	if c.MaxDatagram == 0 {
		c.MaxDatagram = defaultMaxDatagram
	}
	if c.RecvBuffer == 0 {
		c.RecvBuffer = defaultSockBuf
	}
	if c.SendBuffer == 0 {
		c.SendBuffer = defaultSockBuf
	}
	if c.InboxSize < 1 || c.InboxSize > maxInboxSize {
		return fmt.Errorf("batchio: inbox size %d; want 1 to %d", c.InboxSize, maxInboxSize)
	}
	if c.MaxDatagram < 1 || c.MaxDatagram > maxUDPDatagram {
		return fmt.Errorf("batchio: max datagram %d; want 1 to %d", c.MaxDatagram, maxUDPDatagram)
	}
	return nil
}

// UDPStats are a UDPConn's counters, readable from any goroutine.
type UDPStats struct {
	RecvPackets uint64 // datagrams returned by ReadBatch
	SendPackets uint64 // datagrams the system accepted
	SendDropped uint64 // writes refused: bad message, wrong family or a system error
	InboxFull   uint64 // arrivals dropped because ReadBatch fell behind
	Truncated   uint64 // arrivals longer than MaxDatagram or than the reader's buffer
	ReadErrors  uint64 // failed reads (other than Close)
}

// UDPConn is a UDP socket that works wherever Go does (on Linux, Listen
// opens an MmsgConn, which moves a batch per system call). Go's net.UDPConn cannot read without blocking, so one reader
// goroutine per socket blocks in ReadFromUDPAddrPort, straight into the
// free slot of a single-producer single-consumer ring of preallocated
// buffers, and ReadBatch drains the ring. Neither side takes a lock or
// allocates per datagram.
type UDPConn struct {
	udp   *net.UDPConn
	ipv4  bool
	local netip.AddrPort
	wake  wake

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
		recv, sent, sendDropped, inboxFull, truncated, readErrors atomic.Uint64
	}
}

// udpSlot is one ring entry. Its buffer has one byte more than
// MaxDatagram, so a read that fills it shows the datagram was too long.
type udpSlot struct {
	buf  []byte
	n    int
	from netip.AddrPort
}

var _ Conn = (*UDPConn)(nil)

// ListenUDP opens a UDP socket on addr. An IPv4 (or IPv4-mapped) address
// opens an IPv4 socket; an IPv6 address an IPv6-only one, so serve both
// families with two sockets, as with ListenMmsg.
func ListenUDP(addr netip.AddrPort, cfg UDPConfig) (*UDPConn, error) {
	if err := cfg.validate(); err != nil {
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
	c := &UDPConn{
		udp:     udp,
		ipv4:    ipv4,
		local:   local,
		wake:    newWake(),
		slots:   make([]udpSlot, cfg.InboxSize),
		scratch: make([]byte, cfg.MaxDatagram+1),
	}
	for i := range c.slots {
		c.slots[i].buf = make([]byte, cfg.MaxDatagram+1)
	}
	c.reader.Add(1)
	go c.readLoop()
	return c, nil
}

// readLoop is the reader goroutine. It exits when Close closes the socket.
func (c *UDPConn) readLoop() {
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
		c.wake.notify()
	}
}

// LocalAddr returns the bound address.
func (c *UDPConn) LocalAddr() netip.AddrPort { return c.local }

// Stats returns the socket's counters.
func (c *UDPConn) Stats() UDPStats {
	return UDPStats{
		RecvPackets: c.stats.recv.Load(), SendPackets: c.stats.sent.Load(),
		SendDropped: c.stats.sendDropped.Load(), InboxFull: c.stats.inboxFull.Load(),
		Truncated: c.stats.truncated.Load(), ReadErrors: c.stats.readErrors.Load(),
	}
}

// ReadBatch copies datagrams the reader has queued into msgs without
// blocking. A datagram longer than the next message's buffer is dropped
// and counted, and does not use up that message.
func (c *UDPConn) ReadBatch(msgs []Message) (int, error) {
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

// WaitRead blocks until the reader queues a datagram, the deadline passes
// or the socket is closed.
func (c *UDPConn) WaitRead(deadline time.Time) error {
	if c.closed.Load() {
		return ErrClosed
	}
	c.wake.clear()
	if c.tail.Load() != c.head.Load() {
		return nil
	}
	err := c.wake.wait(deadline)
	if err == nil && c.closed.Load() {
		err = ErrClosed
	}
	return err
}

// WriteBatch sends each message with one system call. An IPv4 socket
// unmaps IPv4-mapped destinations; a destination of the other family, a
// bad message or a datagram the system refuses is counted and skipped, as
// MmsgConn does. It returns how many the system accepted.
func (c *UDPConn) WriteBatch(msgs []Message) (int, error) {
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

func (c *UDPConn) count(sent, dropped int) {
	c.stats.sent.Add(uint64(sent))
	c.stats.sendDropped.Add(uint64(dropped))
}

// destination checks the address family before the system call: Go
// reports a mismatch with an allocated error, and a datagram that cannot
// be sent should cost nothing.
func (c *UDPConn) destination(a netip.AddrPort) (netip.AddrPort, bool) {
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
func (c *UDPConn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.wake.done)
		c.closeErr = c.udp.Close()
		c.reader.Wait()
	})
	return c.closeErr
}

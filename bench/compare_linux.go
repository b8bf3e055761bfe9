//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/netcode-go/netcode/batchio"
)

// The comparison conns are the receive paths batchio's socket is measured
// against, kept out of it so that the production socket has one path:
// "xnet" reads and writes batches with golang.org/x/net's PacketConn
// (recvmmsg/sendmmsg through syscall.Syscall6, allocating per message),
// "single" makes one recvfrom or sendto per datagram. Like batchio's
// socket they never block in a read and park in WaitRead on the netpoller.

const (
	compareBatch    = 64
	compareMaxBatch = 1024
	compareSockBuf  = 4 << 20
	// compareRetries bounds the retries of one sendto after EINTR, EAGAIN
	// or ENOBUFS, as batchio bounds a sendmmsg's.
	compareRetries = 4
)

// aLongTimeAgo is a read deadline that has passed: setting it ends a
// parked wait at once.
var aLongTimeAgo = time.Unix(1, 0)

var zeroTimespec unix.Timespec

// cmpConn is the part of a comparison conn that does not depend on the
// mode: the socket, the wait and wake, the counters.
type cmpConn struct {
	udp   *net.UDPConn
	file  *os.File // a duplicate descriptor: its RawConn reports waits without allocating
	rc    syscall.RawConn
	ipv6  bool
	batch int
	local netip.AddrPort

	waitFn      func(fd uintptr) bool
	pollFn      func(fd uintptr)
	waited      bool
	ready       bool
	pfd         [1]unix.PollFd
	wakePending atomic.Bool
	closed      atomic.Bool

	stats struct {
		recvCalls, recvPackets, sendCalls, sendPackets atomic.Uint64
		sendRetries, sendDropped, truncated, waits     atomic.Uint64
	}
	bufWant, bufGot [2]int // receive, send
}

// xnetConn reads and writes with x/net's batch API.
type xnetConn struct {
	cmpConn
	x4   *ipv4.PacketConn
	x6   *ipv6.PacketConn
	msgs []ipv4.Message
}

// singleConn makes a system call per datagram. recvFn and sendFn are the
// calls, made once as method values so that passing them to RawConn does
// not allocate (tests wrap them to inject errors).
type singleConn struct {
	cmpConn
	recvFn, sendFn func(fd uintptr)
	buf            []byte
	name           unix.RawSockaddrInet6
	nameLen        uint32
	count          int
	errno          syscall.Errno
}

var (
	_ batchio.Conn        = (*xnetConn)(nil)
	_ batchio.Conn        = (*singleConn)(nil)
	_ batchio.Waker       = (*xnetConn)(nil)
	_ batchio.StatsReader = (*singleConn)(nil)
)

// ListenComparison opens a UDP socket on addr that receives in a
// comparison-only mode: "xnet" (golang.org/x/net's ReadBatch and
// WriteBatch) or "single" (one recvfrom or sendto per datagram). It is
// for benchmarks (netbench -recv, batchio's BenchmarkLoopbackEcho) that
// compare these with batchio.Listen's socket. Of cfg, BatchSize, the
// buffer sizes, ReusePort and TOS apply; the conns never use GSO;
// PacketInfo and BlockingWait are errors. The conns are batchio.Wakers
// and batchio.StatsReaders.
func ListenComparison(addr netip.AddrPort, mode string, cfg batchio.Config) (batchio.Conn, error) {
	if mode != "xnet" && mode != "single" {
		return nil, fmt.Errorf("bench: comparison mode %q; want xnet or single", mode)
	}
	if cfg.PacketInfo || cfg.BlockingWait {
		return nil, fmt.Errorf("bench: the %s comparison conn has no PacketInfo or BlockingWait", mode)
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = compareBatch
	}
	if cfg.BatchSize < 1 || cfg.BatchSize > compareMaxBatch {
		return nil, fmt.Errorf("bench: batch size %d; want 1 to %d", cfg.BatchSize, compareMaxBatch)
	}
	if cfg.TOS < 0 || cfg.TOS > 255 {
		return nil, fmt.Errorf("bench: TOS %d; want 0 to 255", cfg.TOS)
	}
	if mode == "xnet" {
		c := &xnetConn{msgs: make([]ipv4.Message, cfg.BatchSize)}
		if err := c.open(addr, cfg); err != nil {
			return nil, err
		}
		for i := range c.msgs {
			c.msgs[i].Buffers = make([][]byte, 1)
		}
		if c.ipv6 {
			c.x6 = ipv6.NewPacketConn(c.udp)
		} else {
			c.x4 = ipv4.NewPacketConn(c.udp)
		}
		return c, nil
	}
	c := &singleConn{}
	if err := c.open(addr, cfg); err != nil {
		return nil, err
	}
	c.recvFn, c.sendFn = c.recvfrom, c.sendto
	return c, nil
}

// open opens and binds the socket with the options of cfg.
func (c *cmpConn) open(addr netip.AddrPort, cfg batchio.Config) error {
	if !addr.IsValid() {
		return fmt.Errorf("bench: listen address %v is not valid", addr)
	}
	ipv6 := !addr.Addr().Unmap().Is4()
	network := "udp6" // IPv6-only, like batchio's
	if !ipv6 {
		network = "udp4"
		addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	}
	c.ipv6, c.batch = ipv6, cfg.BatchSize
	for i, want := range [2]int{cfg.RecvBuffer, cfg.SendBuffer} {
		if want == 0 {
			want = compareSockBuf
		}
		c.bufWant[i] = max(want, 0)
	}
	var optErr error
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		err := rc.Control(func(fd uintptr) { optErr = c.setOptions(int(fd), cfg) })
		return errors.Join(err, optErr)
	}}
	pc, err := lc.ListenPacket(context.Background(), network, addr.String())
	if err != nil {
		return fmt.Errorf("bench: listen %v: %w", addr, err)
	}
	c.udp = pc.(*net.UDPConn)
	if c.file, err = c.udp.File(); err == nil {
		c.rc, err = c.file.SyscallConn()
	}
	if err != nil {
		c.udp.Close()
		if c.file != nil {
			c.file.Close()
		}
		return fmt.Errorf("bench: %v: %w", addr, err)
	}
	c.local = c.udp.LocalAddr().(*net.UDPAddr).AddrPort()
	if !ipv6 {
		c.local = netip.AddrPortFrom(c.local.Addr().Unmap(), c.local.Port())
	}
	c.waitFn, c.pollFn = c.waitOnce, c.pollNow
	return nil
}

// setOptions runs on the socket before it is bound. Buffers are asked for
// as batchio asks: the FORCE variant first (it ignores rmem_max/wmem_max
// but needs CAP_NET_ADMIN), so that both kinds of socket get the same.
func (c *cmpConn) setOptions(fd int, cfg batchio.Config) error {
	if cfg.ReusePort {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return err
		}
	}
	opts := [2][2]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}}
	for i, o := range opts {
		if want := c.bufWant[i]; want > 0 && unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[0], want) != nil {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[1], want); err != nil {
				return err
			}
		}
		got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, o[1])
		if err != nil {
			return err
		}
		c.bufGot[i] = got / 2 // Linux reports twice what it grants
	}
	if cfg.TOS != 0 {
		if c.ipv6 {
			return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, cfg.TOS)
		}
		return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, cfg.TOS)
	}
	return nil
}

// LocalAddr returns the bound address.
func (c *cmpConn) LocalAddr() netip.AddrPort { return c.local }

// Stats returns the counters.
func (c *cmpConn) Stats() batchio.Stats {
	return batchio.Stats{
		RecvCalls: c.stats.recvCalls.Load(), RecvPackets: c.stats.recvPackets.Load(),
		SendCalls: c.stats.sendCalls.Load(), SendPackets: c.stats.sendPackets.Load(),
		SendRetries: c.stats.sendRetries.Load(), SendDropped: c.stats.sendDropped.Load(),
		Truncated: c.stats.truncated.Load(), Waits: c.stats.waits.Load(),
		RecvBufferWant: c.bufWant[0], RecvBufferGot: c.bufGot[0],
		SendBufferWant: c.bufWant[1], SendBufferGot: c.bufGot[1],
	}
}

// Close closes both descriptors and wakes a WaitRead.
func (c *cmpConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return errors.Join(c.udp.Close(), c.file.Close())
}

// Wake ends a WaitRead in progress, or the next one, from any goroutine.
func (c *cmpConn) Wake() {
	if c.wakePending.Swap(true) || c.closed.Load() {
		return
	}
	c.file.SetReadDeadline(aLongTimeAgo)
}

// WaitRead parks on the netpoller until a datagram may be ready, the
// deadline, Wake or Close.
func (c *cmpConn) WaitRead(deadline time.Time) error {
	if c.closed.Load() {
		return batchio.ErrClosed
	}
	c.stats.waits.Add(1)
	if err := c.file.SetReadDeadline(deadline); err != nil {
		return c.mapErr(err)
	}
	if c.wakePending.Swap(false) {
		return nil
	}
	c.waited = false
	err := c.rc.Read(c.waitFn)
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	return c.mapErr(err)
}

// waitOnce makes RawConn.Read park once, unless data is already there.
func (c *cmpConn) waitOnce(fd uintptr) bool {
	if c.waited {
		return true
	}
	c.waited = true
	c.pollNow(fd)
	return c.ready
}

func (c *cmpConn) pollNow(fd uintptr) {
	c.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	r, _, e := syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&c.pfd[0])), 1,
		uintptr(unsafe.Pointer(&zeroTimespec)), 0, 0, 0)
	c.ready = e == 0 && r > 0
}

// readable polls the socket without blocking.
func (c *cmpConn) readable() bool {
	c.ready = false
	if c.rc.Control(c.pollFn) != nil {
		return false
	}
	return c.ready
}

// mapErr reports any failure after Close as batchio.ErrClosed.
func (c *cmpConn) mapErr(err error) error {
	if c.closed.Load() || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) {
		return batchio.ErrClosed
	}
	return err
}

// destination checks a message's address against the socket's family.
func (c *cmpConn) destination(m *batchio.Message) (netip.AddrPort, bool) {
	ip := m.Addr.Addr()
	if m.N <= 0 || m.N > len(m.Buf) || m.Addr.Port() == 0 {
		return m.Addr, false
	}
	if !c.ipv6 {
		ip = ip.Unmap()
		return netip.AddrPortFrom(ip, m.Addr.Port()), ip.Is4()
	}
	return m.Addr, ip.Is6() && !ip.Is4In6()
}

// ReadBatch reads the datagrams waiting, with x/net's ReadBatch after a
// poll (x/net's blocks when nothing is there).
func (c *xnetConn) ReadBatch(msgs []batchio.Message) (int, error) {
	if c.closed.Load() {
		return 0, batchio.ErrClosed
	}
	n := min(len(msgs), c.batch)
	if n == 0 || !c.readable() {
		return 0, nil
	}
	for i := range n {
		c.msgs[i].Buffers[0] = msgs[i].Buf
		c.msgs[i].Addr = nil
	}
	var err error
	if c.ipv6 {
		n, err = c.x6.ReadBatch(c.msgs[:n], 0)
	} else {
		n, err = c.x4.ReadBatch(c.msgs[:n], 0)
	}
	c.stats.recvCalls.Add(1)
	if err != nil {
		return 0, c.mapErr(err)
	}
	got := 0
	for i := range n {
		if c.msgs[i].Flags&unix.MSG_TRUNC != 0 {
			c.stats.truncated.Add(1)
			continue
		}
		ua, ok := c.msgs[i].Addr.(*net.UDPAddr)
		if !ok {
			continue
		}
		if got != i {
			msgs[got].Buf, msgs[i].Buf = msgs[i].Buf, msgs[got].Buf
		}
		from := ua.AddrPort()
		if !c.ipv6 {
			from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		}
		msgs[got].N = c.msgs[i].N
		msgs[got].Addr = from
		msgs[got].Local = netip.Addr{}
		got++
	}
	c.stats.recvPackets.Add(uint64(got))
	return got, nil
}

// WriteBatch sends with x/net's WriteBatch, a batch at a time. A datagram
// that cannot be sent is dropped and counted, and the rest go on.
func (c *xnetConn) WriteBatch(msgs []batchio.Message) (int, error) {
	if c.closed.Load() {
		return 0, batchio.ErrClosed
	}
	sent := 0
	for len(msgs) > 0 {
		k := 0
		for k < c.batch && k < len(msgs) {
			m := &msgs[k]
			to, ok := c.destination(m)
			if !ok {
				break
			}
			c.msgs[k].Buffers[0] = m.Buf[:m.N]
			c.msgs[k].Addr = net.UDPAddrFromAddrPort(to)
			k++
		}
		if k == 0 {
			c.stats.sendDropped.Add(1)
			msgs = msgs[1:]
			continue
		}
		var n int
		var err error
		if c.ipv6 {
			n, err = c.x6.WriteBatch(c.msgs[:k], 0)
		} else {
			n, err = c.x4.WriteBatch(c.msgs[:k], 0)
		}
		c.stats.sendCalls.Add(1)
		sent += n
		c.stats.sendPackets.Add(uint64(n))
		msgs = msgs[n:]
		if err != nil {
			if err = c.mapErr(err); errors.Is(err, batchio.ErrClosed) {
				return sent, err
			}
			// The datagram at the head failed: drop it and go on.
			c.stats.sendDropped.Add(1)
			msgs = msgs[1:]
		}
	}
	return sent, nil
}

// ReadBatch reads the datagrams waiting, one recvfrom each.
func (c *singleConn) ReadBatch(msgs []batchio.Message) (int, error) {
	if c.closed.Load() {
		return 0, batchio.ErrClosed
	}
	got := 0
	for got < min(len(msgs), c.batch) {
		c.buf = msgs[got].Buf
		c.nameLen = unix.SizeofSockaddrInet6
		if err := c.rc.Control(c.recvFn); err != nil {
			return got, c.mapErr(err)
		}
		c.stats.recvCalls.Add(1)
		if c.errno != 0 {
			if c.errno == unix.EAGAIN || c.errno == unix.EINTR {
				break
			}
			return got, fmt.Errorf("bench: recvfrom: %w", c.errno)
		}
		if c.count > len(c.buf) {
			c.stats.truncated.Add(1)
			continue
		}
		msgs[got].N = c.count
		msgs[got].Addr = decodeSockaddr(&c.name)
		msgs[got].Local = netip.Addr{}
		got++
	}
	c.buf = nil
	c.stats.recvPackets.Add(uint64(got))
	return got, nil
}

// recvfrom runs inside RawConn.Control. MSG_TRUNC makes it return the real
// length, so a truncated datagram is detected.
func (c *singleConn) recvfrom(fd uintptr) {
	if len(c.buf) == 0 {
		c.errno = unix.EINVAL
		return
	}
	r, _, e := syscall.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&c.buf[0])), uintptr(len(c.buf)),
		unix.MSG_DONTWAIT|unix.MSG_TRUNC, uintptr(unsafe.Pointer(&c.name)), uintptr(unsafe.Pointer(&c.nameLen)))
	c.errno = e
	c.count = int(r)
}

// WriteBatch sends each datagram with its own sendto. EINTR, EAGAIN and
// ENOBUFS are retried a bounded number of times; a datagram that still
// fails, or cannot be sent from this socket, is dropped and counted.
func (c *singleConn) WriteBatch(msgs []batchio.Message) (int, error) {
	if c.closed.Load() {
		return 0, batchio.ErrClosed
	}
	sent := 0
	for i := range msgs {
		m := &msgs[i]
		to, ok := c.destination(m)
		if !ok {
			c.stats.sendDropped.Add(1)
			continue
		}
		c.buf = m.Buf[:m.N]
		c.nameLen = encodeSockaddr(&c.name, to, c.ipv6)
		for retries := 0; ; retries++ {
			if err := c.rc.Control(c.sendFn); err != nil {
				return sent, c.mapErr(err)
			}
			c.stats.sendCalls.Add(1)
			transient := c.errno == unix.EINTR || c.errno == unix.EAGAIN || c.errno == unix.ENOBUFS
			if !transient || retries == compareRetries {
				break
			}
			c.stats.sendRetries.Add(1)
		}
		if c.errno != 0 {
			c.stats.sendDropped.Add(1)
			continue
		}
		sent++
	}
	c.buf = nil
	c.stats.sendPackets.Add(uint64(sent))
	return sent, nil
}

// sendto runs inside RawConn.Control.
func (c *singleConn) sendto(fd uintptr) {
	_, _, e := syscall.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&c.buf[0])), uintptr(len(c.buf)),
		unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&c.name)), uintptr(c.nameLen))
	c.errno = e
}

// decodeSockaddr turns a kernel socket address into a netip.AddrPort
// without allocating.
func decodeSockaddr(sa *unix.RawSockaddrInet6) netip.AddrPort {
	port := func(p *uint16) uint16 { b := (*[2]byte)(unsafe.Pointer(p)); return uint16(b[0])<<8 | uint16(b[1]) }
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port(&sa4.Port))
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), port(&sa.Port))
	}
	return netip.AddrPort{}
}

// encodeSockaddr writes to, already checked against the socket's family,
// and returns the address length.
func encodeSockaddr(sa *unix.RawSockaddrInet6, to netip.AddrPort, ipv6 bool) uint32 {
	p := (*[2]byte)(unsafe.Pointer(&sa.Port)) // the same offset in both layouts
	p[0], p[1] = byte(to.Port()>>8), byte(to.Port())
	if !ipv6 {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		sa4.Family, sa4.Addr = unix.AF_INET, to.Addr().As4()
		return unix.SizeofSockaddrInet4
	}
	sa.Family, sa.Flowinfo, sa.Addr, sa.Scope_id = unix.AF_INET6, 0, to.Addr().As16(), 0
	return unix.SizeofSockaddrInet6
}

//go:build linux

package batchio

import (
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
)

// MmsgConn is a UDP socket read and written in batches with
// recvmmsg/sendmmsg into preallocated headers, so steady-state reads and
// writes allocate nothing (except in RecvXNet mode, which is there to be
// compared).
//
// The system calls are made with RawSyscall6 and MSG_DONTWAIT inside
// RawConn.Control (which keeps the descriptor alive against a concurrent
// Close): a non-blocking call that returns at once does not need the
// scheduler, and letting it know (as syscall.Syscall6 does) made the P
// change hands on every long batch.
type MmsgConn struct {
	file  *os.File
	xconn net.PacketConn // RecvXNet only: x/net reads through it
	rc    syscall.RawConn
	ipv6  bool
	mode  RecvMode
	batch int
	local netip.AddrPort
	// pktinfo: control buffers carry each datagram's local address
	// (MmsgConfig.PacketInfo), pktinfoSpace bytes per read header and
	// sendCtlSpace per write header (which also holds the GSO size).
	pktinfo bool
	rctl    []byte
	wctl    []byte
	// gso is on while WriteBatch groups datagrams into GSO sends; it goes
	// off for good if the first GSO send fails as if GSO were the cause.
	gso       atomic.Bool
	gsoWorked bool

	// Receive state: owner goroutine only.
	rhdrs   []unix.Mmsghdr
	riov    []unix.Iovec
	rnames  []unix.RawSockaddrInet6
	rn      int
	rerr    syscall.Errno
	recvFn  func(fd uintptr)
	waitFn  func(fd uintptr) bool
	pollFn  func(fd uintptr)
	blockFn func(fd uintptr)
	waited  bool
	ready   bool
	pfd     [2]unix.PollFd
	block   time.Duration

	// Wake support: wakePending is set by Wake (any goroutine) and
	// consumed by WaitRead; efd is an eventfd that wakes RecvBlock's poll.
	wakePending atomic.Bool
	efd         int
	one         [8]byte
	drain       [8]byte

	// Send state: owner goroutine only. Header i sends wsegs[i]
	// consecutive entries of wiov: one datagram, or the segments of a GSO
	// send.
	whdrs  []unix.Mmsghdr
	wiov   []unix.Iovec
	wnames []unix.RawSockaddrInet6
	wsegs  []int
	wcount int
	wn     int
	werr   syscall.Errno
	sendFn func(fd uintptr)

	// x/net state (RecvXNet only).
	x4    *ipv4.PacketConn
	x6    *ipv6.PacketConn
	xmsgs []ipv4.Message

	// Single-datagram state (RecvSingle only).
	single      []byte
	singleName  unix.RawSockaddrInet6
	singleLen   uint32
	singleCount int

	closed atomic.Bool
	stats  struct {
		recvCalls, recvPackets, sendCalls, sendPackets atomic.Uint64
		sendRetries, sendDropped, truncated, waits     atomic.Uint64
		gsoBatches                                     atomic.Uint64
	}
	recvBufGot, sendBufGot   int
	recvBufWant, sendBufWant int
}

var (
	_ Conn        = (*MmsgConn)(nil)
	_ StatsReader = (*MmsgConn)(nil)
)

// ListenMmsg opens a UDP socket on addr (IPv4 or IPv6; an IPv6 socket is
// IPv6-only, so serve both families with two sockets).
func ListenMmsg(addr netip.AddrPort, cfg MmsgConfig) (*MmsgConn, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if !addr.IsValid() {
		return nil, fmt.Errorf("batchio: listen address %v is not valid", addr)
	}
	ipv6 := !addr.Addr().Unmap().Is4()
	if !ipv6 {
		addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	}
	fd, local, bufs, err := openSocket(addr, ipv6, &cfg)
	if err != nil {
		return nil, err
	}
	// An os.File, not a net.UDPConn: its RawConn reports a deadline or a
	// close as a bare error value, where net's allocates an *OpError each
	// time a wait times out or is woken.
	file := os.NewFile(uintptr(fd), "udp:"+local.String())
	rc, err := file.SyscallConn()
	if err != nil {
		file.Close()
		return nil, err
	}
	c := &MmsgConn{
		file:        file,
		rc:          rc,
		ipv6:        ipv6,
		mode:        cfg.Mode,
		batch:       cfg.BatchSize,
		local:       local,
		recvBufGot:  bufs[0],
		sendBufGot:  bufs[1],
		recvBufWant: cfg.RecvBuffer,
		sendBufWant: cfg.SendBuffer,
		efd:         -1,
		pktinfo:     cfg.PacketInfo,
	}
	c.gso.Store(cfg.GSO && probeGSO(fd))
	if cfg.Mode == RecvBlock {
		if c.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
			file.Close()
			return nil, fmt.Errorf("batchio: eventfd: %w", err)
		}
	}
	if cfg.Mode == RecvXNet {
		// x/net needs a net.PacketConn: a second descriptor on the socket.
		pc, err := net.FilePacketConn(file)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("batchio: x/net conn: %w", err)
		}
		c.xconn = pc
	}
	c.init()
	return c, nil
}

// openSocket makes a non-blocking UDP socket with the configured options
// and binds it. It returns the descriptor, the bound address and the buffer
// sizes the kernel granted.
func openSocket(addr netip.AddrPort, ipv6 bool, cfg *MmsgConfig) (int, netip.AddrPort, [2]int, error) {
	var bufs [2]int
	family := unix.AF_INET
	if ipv6 {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return -1, netip.AddrPort{}, bufs, fmt.Errorf("batchio: socket: %w", err)
	}
	fail := func(what string, err error) (int, netip.AddrPort, [2]int, error) {
		unix.Close(fd)
		return -1, netip.AddrPort{}, bufs, fmt.Errorf("batchio: %s on %v: %w", what, addr, err)
	}
	if cfg.ReusePort {
		if err := setReusePort(fd); err != nil {
			return fail("SO_REUSEPORT", err)
		}
	}
	if ipv6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			return fail("IPV6_V6ONLY", err)
		}
	}
	if bufs[0], err = setBuffer(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, cfg.RecvBuffer); err != nil {
		return fail("receive buffer", err)
	}
	if bufs[1], err = setBuffer(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, cfg.SendBuffer); err != nil {
		return fail("send buffer", err)
	}
	if cfg.TOS != 0 {
		if err := setTOS(fd, ipv6, cfg.TOS); err != nil {
			return fail("TOS", err)
		}
	}
	if cfg.PacketInfo {
		if err := enablePacketInfo(fd, ipv6); err != nil {
			return fail("packet info", err)
		}
	}
	var sa unix.Sockaddr
	if ipv6 {
		sa = &unix.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16()}
	} else {
		sa = &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	bound, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	var local netip.AddrPort
	switch b := bound.(type) {
	case *unix.SockaddrInet4:
		local = netip.AddrPortFrom(netip.AddrFrom4(b.Addr), uint16(b.Port))
	case *unix.SockaddrInet6:
		local = netip.AddrPortFrom(netip.AddrFrom16(b.Addr), uint16(b.Port))
	}
	return fd, local, bufs, nil
}

// BufferShortfall reports whether the kernel granted less socket buffer
// than was asked for (a caller should warn: bursts will be dropped).
func (c *MmsgConn) BufferShortfall() bool {
	return (c.recvBufWant > 0 && c.recvBufGot < c.recvBufWant) || (c.sendBufWant > 0 && c.sendBufGot < c.sendBufWant)
}

// BufferSizes returns the receive and send buffer sizes asked for and
// granted (0 asked: the system default).
func (c *MmsgConn) BufferSizes() (recvWant, recvGot, sendWant, sendGot int) {
	return max(c.recvBufWant, 0), c.recvBufGot, max(c.sendBufWant, 0), c.sendBufGot
}

func (c *MmsgConn) init() {
	n := c.batch
	c.rhdrs = make([]unix.Mmsghdr, n)
	c.riov = make([]unix.Iovec, n)
	c.rnames = make([]unix.RawSockaddrInet6, n)
	c.whdrs = make([]unix.Mmsghdr, n)
	c.wiov = make([]unix.Iovec, n)
	c.wnames = make([]unix.RawSockaddrInet6, n)
	c.wsegs = make([]int, n)
	for i := range n {
		c.rhdrs[i].Hdr.Iov = &c.riov[i]
		c.rhdrs[i].Hdr.SetIovlen(1)
		c.whdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&c.wnames[i]))
	}
	if c.pktinfo {
		c.rctl = make([]byte, n*pktinfoSpace)
	}
	if c.pktinfo || c.gso.Load() {
		c.wctl = make([]byte, n*sendCtlSpace)
	}
	// Method values are made once: passing a fresh closure to RawConn on
	// every call would allocate.
	c.recvFn = c.recvmmsg
	c.sendFn = c.sendmmsg
	c.waitFn = c.waitOnce
	c.pollFn = c.pollNow
	c.blockFn = c.pollBlock
	switch c.mode {
	case RecvXNet:
		if c.ipv6 {
			c.x6 = ipv6.NewPacketConn(c.xconn)
		} else {
			c.x4 = ipv4.NewPacketConn(c.xconn)
		}
		c.xmsgs = make([]ipv4.Message, n)
		for i := range c.xmsgs {
			c.xmsgs[i].Buffers = make([][]byte, 1)
		}
	case RecvSingle:
		c.recvFn = c.recvfrom
		c.sendFn = c.sendto
	}
}

// LocalAddr returns the bound address.
func (c *MmsgConn) LocalAddr() netip.AddrPort { return c.local }

// Mode returns the receive mode.
func (c *MmsgConn) Mode() RecvMode { return c.mode }

// BatchSize returns the most datagrams one system call moves.
func (c *MmsgConn) BatchSize() int { return c.batch }

// Stats returns the socket's counters.
func (c *MmsgConn) Stats() MmsgStats {
	return MmsgStats{
		RecvCalls: c.stats.recvCalls.Load(), RecvPackets: c.stats.recvPackets.Load(),
		SendCalls: c.stats.sendCalls.Load(), SendPackets: c.stats.sendPackets.Load(),
		SendRetries: c.stats.sendRetries.Load(), SendDropped: c.stats.sendDropped.Load(),
		Truncated: c.stats.truncated.Load(), Waits: c.stats.waits.Load(),
		RecvBufferGot: c.recvBufGot, SendBufferGot: c.sendBufGot,
		GSOBatches: c.stats.gsoBatches.Load(),
	}
}

// Close closes the socket and wakes a blocked WaitRead.
func (c *MmsgConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	var errs []error
	if c.xconn != nil {
		errs = append(errs, c.xconn.Close())
	}
	errs = append(errs, c.file.Close()) // waits for a poll in progress to return
	if c.efd >= 0 {
		unix.Close(c.efd)
	}
	return errors.Join(errs...)
}

// aLongTimeAgo is a read deadline that has passed: setting it makes a
// parked read return at once.
var aLongTimeAgo = time.Unix(1, 0)

// Wake makes a WaitRead in progress, or the next one, return promptly. It
// may be called from any goroutine: it is how an application that queued
// work for a parked socket owner (a server shard) gets its attention.
func (c *MmsgConn) Wake() {
	if c.wakePending.Swap(true) {
		return // a wake is already on its way
	}
	if c.closed.Load() {
		return
	}
	if c.efd >= 0 {
		c.one[0] = 1
		syscall.RawSyscall(unix.SYS_WRITE, uintptr(c.efd), uintptr(unsafe.Pointer(&c.one[0])), 8)
		return
	}
	c.file.SetReadDeadline(aLongTimeAgo)
}

// mapErr reports any failure after Close as ErrClosed (an os.File says
// "use of closed file", which has no exported value).
func (c *MmsgConn) mapErr(err error) error {
	if c.closed.Load() || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	return err
}

// ReadBatch reads the datagrams already waiting, up to len(msgs) and at
// most BatchSize per call, without blocking.
func (c *MmsgConn) ReadBatch(msgs []Message) (int, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	n := min(len(msgs), c.batch)
	if n == 0 {
		return 0, nil
	}
	if c.mode == RecvXNet {
		return c.readXNet(msgs[:n])
	}
	if c.mode == RecvSingle {
		return c.readSingle(msgs[:n])
	}
	for i := range n {
		buf := msgs[i].Buf
		if len(buf) == 0 {
			n = i
			break
		}
		c.riov[i].Base = &buf[0]
		c.riov[i].SetLen(len(buf))
		h := &c.rhdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&c.rnames[i]))
		h.Namelen = unix.SizeofSockaddrInet6
		h.Flags = 0
		if c.pktinfo {
			h.Control = &c.rctl[i*pktinfoSpace]
			h.SetControllen(pktinfoSpace)
		}
	}
	c.rn = n
	if err := c.rc.Control(c.recvFn); err != nil {
		return 0, c.mapErr(err)
	}
	c.stats.recvCalls.Add(1)
	if c.rerr != 0 {
		if c.rerr == unix.EAGAIN || c.rerr == unix.EINTR {
			return 0, nil
		}
		return 0, fmt.Errorf("batchio: recvmmsg: %w", c.rerr)
	}
	got := 0
	for i := range c.rn {
		h := &c.rhdrs[i]
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			c.stats.truncated.Add(1)
			continue
		}
		if got != i {
			// Compact over a dropped truncated datagram by swapping buffers,
			// so every caller buffer stays owned by exactly one message.
			msgs[got].Buf, msgs[i].Buf = msgs[i].Buf, msgs[got].Buf
		}
		msgs[got].N = int(h.Len)
		msgs[got].Addr = decodeSockaddr(&c.rnames[i])
		msgs[got].Local = netip.Addr{}
		if c.pktinfo {
			off := i * pktinfoSpace
			msgs[got].Local = parsePacketInfo(c.rctl[off : off+min(int(h.Hdr.Controllen), pktinfoSpace)])
		}
		got++
	}
	c.stats.recvPackets.Add(uint64(got))
	return got, nil
}

// recvmmsg runs inside RawConn.Control.
func (c *MmsgConn) recvmmsg(fd uintptr) {
	r, _, e := syscall.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&c.rhdrs[0])),
		uintptr(c.rn), unix.MSG_DONTWAIT, 0, 0)
	c.rerr = e
	if e == 0 {
		c.rn = int(r)
	}
}

func (c *MmsgConn) readSingle(msgs []Message) (int, error) {
	got := 0
	for got < len(msgs) {
		c.single = msgs[got].Buf
		c.singleLen = unix.SizeofSockaddrInet6
		if err := c.rc.Control(c.recvFn); err != nil {
			return got, c.mapErr(err)
		}
		c.stats.recvCalls.Add(1)
		if c.rerr != 0 {
			if c.rerr == unix.EAGAIN || c.rerr == unix.EINTR {
				break
			}
			return got, fmt.Errorf("batchio: recvfrom: %w", c.rerr)
		}
		if c.singleCount > len(c.single) {
			c.stats.truncated.Add(1)
			continue
		}
		msgs[got].N = c.singleCount
		msgs[got].Addr = decodeSockaddr(&c.singleName)
		got++
	}
	c.single = nil
	c.stats.recvPackets.Add(uint64(got))
	return got, nil
}

// recvfrom runs inside RawConn.Control. MSG_TRUNC makes it return the real
// length so a truncated datagram is detected.
func (c *MmsgConn) recvfrom(fd uintptr) {
	if len(c.single) == 0 {
		c.rerr = unix.EINVAL
		return
	}
	r, _, e := syscall.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&c.single[0])), uintptr(len(c.single)),
		unix.MSG_DONTWAIT|unix.MSG_TRUNC, uintptr(unsafe.Pointer(&c.singleName)), uintptr(unsafe.Pointer(&c.singleLen)))
	c.rerr = e
	c.singleCount = int(r)
}

func (c *MmsgConn) readXNet(msgs []Message) (int, error) {
	// x/net's ReadBatch blocks when nothing is waiting, so look first.
	if !c.readable() {
		return 0, nil
	}
	for i := range msgs {
		c.xmsgs[i].Buffers[0] = msgs[i].Buf
		c.xmsgs[i].Addr = nil
	}
	var n int
	var err error
	if c.ipv6 {
		n, err = c.x6.ReadBatch(c.xmsgs[:len(msgs)], 0)
	} else {
		n, err = c.x4.ReadBatch(c.xmsgs[:len(msgs)], 0)
	}
	c.stats.recvCalls.Add(1)
	if err != nil {
		return 0, c.mapErr(err)
	}
	got := 0
	for i := range n {
		if c.xmsgs[i].Flags&unix.MSG_TRUNC != 0 {
			c.stats.truncated.Add(1)
			continue
		}
		ua, ok := c.xmsgs[i].Addr.(*net.UDPAddr)
		if !ok {
			continue
		}
		if got != i {
			msgs[got].Buf, msgs[i].Buf = msgs[i].Buf, msgs[got].Buf
		}
		msgs[got].N = c.xmsgs[i].N
		msgs[got].Addr = ua.AddrPort()
		got++
	}
	c.stats.recvPackets.Add(uint64(got))
	return got, nil
}

// readable polls the socket without blocking.
func (c *MmsgConn) readable() bool {
	c.ready = false
	if c.rc.Control(c.pollFn) != nil {
		return false
	}
	return c.ready
}

var zeroTimespec unix.Timespec

func (c *MmsgConn) pollNow(fd uintptr) {
	c.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	r, _, e := syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&c.pfd[0])), 1,
		uintptr(unsafe.Pointer(&zeroTimespec)), 0, 0, 0)
	c.ready = e == 0 && r > 0
}

// pollBlock waits in ppoll for up to c.block; it blocks the OS thread, which
// is the point of RecvBlock.
func (c *MmsgConn) pollBlock(fd uintptr) {
	c.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	c.pfd[1] = unix.PollFd{Fd: int32(c.efd), Events: unix.POLLIN}
	ts := unix.NsecToTimespec(int64(c.block))
	r, _, e := syscall.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&c.pfd[0])), 2,
		uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	c.ready = e == 0 && r > 0
	if c.ready && c.pfd[1].Revents != 0 {
		syscall.RawSyscall(unix.SYS_READ, uintptr(c.efd), uintptr(unsafe.Pointer(&c.drain[0])), 8)
	}
}

// waitOnce makes RawConn.Read park once on the netpoller: it is called
// before the wait (returns false unless data is already there) and after.
func (c *MmsgConn) waitOnce(fd uintptr) bool {
	if c.waited {
		return true
	}
	c.waited = true
	// Data may be waiting without a fresh edge (the owner stopped draining
	// early); don't park then.
	c.pollNow(fd)
	return c.ready
}

// WaitRead blocks until a datagram may be ready, the deadline passes, or
// the socket is closed.
func (c *MmsgConn) WaitRead(deadline time.Time) error {
	if c.closed.Load() {
		return ErrClosed
	}
	c.stats.waits.Add(1)
	if c.mode == RecvBlock {
		if c.wakePending.Swap(false) {
			return nil
		}
		return c.waitBlock(deadline)
	}
	// Set the deadline first, then look for a wake: a Wake that lands
	// between the two moves the deadline into the past after ours.
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

func (c *MmsgConn) waitBlock(deadline time.Time) error {
	fn := c.blockFn
	for {
		if c.closed.Load() {
			return ErrClosed
		}
		c.block = blockPollSlice
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return nil
			}
			c.block = min(left, blockPollSlice)
		}
		c.ready = false
		if err := c.rc.Control(fn); err != nil {
			return c.mapErr(err)
		}
		if c.ready || c.wakePending.Swap(false) {
			return nil
		}
	}
}

// WriteBatch sends msgs with sendmmsg, BatchSize at a time. A partial send
// resumes where the kernel stopped; EINTR, EAGAIN and ENOBUFS are retried a
// bounded number of times; a datagram that still fails (or has an address
// of the wrong family) is dropped and counted. With GSO, a run of
// datagrams goes as one header and is sent or dropped whole. It returns
// how many datagrams were sent.
func (c *MmsgConn) WriteBatch(msgs []Message) (int, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	sent, plain := 0, 0
	for len(msgs) > 0 {
		n, headers := c.prepare(msgs, plain)
		if n == 0 {
			c.stats.sendDropped.Add(1)
			msgs = msgs[1:]
			plain = max(plain-1, 0)
			continue
		}
		done, consumed, resendPlain, err := c.sendChunk(headers)
		sent += done
		if err != nil {
			return sent, err
		}
		msgs = msgs[consumed:]
		plain = max(plain-consumed, resendPlain)
	}
	return sent, nil
}

// prepare fills send headers from the front of msgs, at most BatchSize
// datagrams, and returns how many messages and headers it used. It stops
// before a message that cannot be sent (which the next round finds first
// and drops), so n is 0 when the first cannot. The first plain messages
// get a header each even with GSO on: they are being resent after a GSO
// send failed.
func (c *MmsgConn) prepare(msgs []Message, plain int) (n, headers int) {
	gso := c.gso.Load()
	limit := min(len(msgs), c.batch)
	for n < limit {
		m := &msgs[n]
		nameLen := encodeSockaddr(&c.wnames[headers], m.Addr, c.ipv6)
		if nameLen == 0 || m.N <= 0 || m.N > len(m.Buf) {
			break
		}
		segs := 1
		if gso && n >= plain {
			segs = c.gsoRun(msgs[n:limit])
		}
		for k := n; k < n+segs; k++ {
			c.wiov[k].Base = &msgs[k].Buf[0]
			c.wiov[k].SetLen(msgs[k].N)
		}
		h := &c.whdrs[headers].Hdr
		h.Namelen = nameLen
		h.Iov = &c.wiov[n]
		h.SetIovlen(segs)
		if c.wctl != nil {
			segmentSize := 0
			if segs > 1 {
				segmentSize = m.N
			}
			c.setControl(headers, m.Local, segmentSize)
		}
		c.wsegs[headers] = segs
		headers++
		n += segs
	}
	return n, headers
}

// sendChunk sends the first n prepared headers. It returns the datagrams
// sent and the messages consumed (sent or dropped). It stops early when a
// GSO header fails in a way its datagrams sent one by one might not
// (gsoPathError): consumed then ends before that header, and resendPlain
// says how many messages to send without GSO. If no GSO send has worked
// on this socket yet, GSO goes off for good: the kernel has it but the
// path does not. Once it has worked, such an error more likely comes from
// the datagrams (a bad Local), so GSO stays on.
func (c *MmsgConn) sendChunk(n int) (sent, consumed, resendPlain int, err error) {
	off, retries := 0, 0
	for off < n {
		c.wcount = n - off
		c.wn = off
		if err := c.rc.Control(c.sendFn); err != nil {
			return sent, consumed, 0, c.mapErr(err)
		}
		c.stats.sendCalls.Add(1)
		switch c.werr {
		case 0:
			// sendmmsg counts headers; the stats and callers count datagrams.
			packets, batches := 0, 0
			for _, segs := range c.wsegs[off : off+c.wcount] {
				packets += segs
				if segs > 1 {
					batches++
				}
			}
			if batches > 0 {
				c.gsoWorked = true
				c.stats.gsoBatches.Add(uint64(batches))
			}
			off += c.wcount
			sent += packets
			consumed += packets
			c.stats.sendPackets.Add(uint64(packets))
			retries = 0
		case unix.EINTR, unix.EAGAIN, unix.ENOBUFS:
			if retries < sendRetries {
				retries++
				c.stats.sendRetries.Add(1)
				continue
			}
			fallthrough
		default:
			segs := c.wsegs[off]
			if segs > 1 && gsoPathError(c.werr) {
				if !c.gsoWorked {
					c.gso.Store(false)
				}
				return sent, consumed, segs, nil
			}
			// The header at the head failed: drop its datagrams and go on.
			off++
			consumed += segs
			retries = 0
			c.stats.sendDropped.Add(uint64(segs))
		}
	}
	return sent, consumed, 0, nil
}

// sendmmsg runs inside RawConn.Control: it sends wcount headers from wn.
func (c *MmsgConn) sendmmsg(fd uintptr) {
	r, _, e := syscall.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&c.whdrs[c.wn])),
		uintptr(c.wcount), unix.MSG_DONTWAIT, 0, 0)
	c.werr = e
	if e == 0 {
		c.wcount = int(r)
	}
}

// sendto is RecvSingle's sender: one datagram per system call.
func (c *MmsgConn) sendto(fd uintptr) {
	h := &c.whdrs[c.wn].Hdr
	_, _, e := syscall.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(h.Iov.Base)), uintptr(h.Iov.Len),
		unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(h.Name)), uintptr(h.Namelen))
	c.werr = e
	if e == 0 {
		c.wcount = 1
	}
}

// sysHooks stand in for the kernel in tests, to make the failures a busy
// host produces and a quiet loopback socket never does: EINTR, EAGAIN and
// ENOBUFS, sendmmsg sending only part of a batch, and hard errors. Each
// hook runs inside RawConn.Control just before the real call (recvmmsg or
// recvfrom, sendmmsg or sendto) and decides its outcome:
//
//   - recv returns a non-zero errno to fail the call with it instead of
//     making it (nothing is read), or 0 to make the call.
//   - send sees the call as the kernel does, in headers: it gets how many
//     headers the call would send and a function that returns the bytes
//     of the i-th (0 is the head). A header is one datagram or, with GSO,
//     a run of datagrams, returned back to back (in a fresh copy), that
//     the kernel sends or fails as a whole. A non-zero errno fails the
//     call with it instead of making it (nothing is sent); otherwise the
//     real call is made with at most limit headers (limit < 1 means all),
//     which is what a short sendmmsg looks like to the caller, and the
//     kernel really sends only those. (A kernel that fails on a header
//     after the head sends the ones before it and reports that count; the
//     next call then fails with that header at the head.)
//
// Hooks do not apply to RecvXNet reads, which go through x/net.
type sysHooks struct {
	recv func() syscall.Errno
	send func(count int, datagram func(i int) []byte) (limit int, errno syscall.Errno)
}

// setSysHooks installs h on a conn that is not in use (tests only). It
// wraps the method values that ReadBatch and WriteBatch hand to
// RawConn.Control, so a conn without hooks (every conn outside tests) runs
// exactly the code it ran before hooks existed: no check, no indirection,
// no allocation. Installing allocates the two wrappers once.
func (c *MmsgConn) setSysHooks(h sysHooks) {
	if h.recv != nil {
		realRecv := c.recvFn
		c.recvFn = func(fd uintptr) {
			if e := h.recv(); e != 0 {
				c.rerr = e
				return
			}
			realRecv(fd)
		}
	}
	if h.send != nil {
		realSend := c.sendFn
		datagram := func(i int) []byte {
			hdr := &c.whdrs[c.wn+i].Hdr
			iovs := unsafe.Slice(hdr.Iov, c.wsegs[c.wn+i])
			if len(iovs) == 1 {
				return unsafe.Slice(iovs[0].Base, iovs[0].Len)
			}
			var run []byte
			for _, iov := range iovs {
				run = append(run, unsafe.Slice(iov.Base, iov.Len)...)
			}
			return run
		}
		c.sendFn = func(fd uintptr) {
			count := c.wcount
			if c.mode == RecvSingle {
				count = 1 // sendto sends the head only
			}
			limit, e := h.send(count, datagram)
			if e != 0 {
				c.werr = e
				return
			}
			if limit >= 1 && limit < c.wcount {
				c.wcount = limit
			}
			realSend(fd)
		}
	}
}

// decodeSockaddr turns a kernel socket address into a netip.AddrPort
// without allocating.
func decodeSockaddr(sa *unix.RawSockaddrInet6) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		p := (*[2]byte)(unsafe.Pointer(&sa4.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), uint16(p[0])<<8|uint16(p[1]))
	case unix.AF_INET6:
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
	}
	return netip.AddrPort{}
}

// encodeSockaddr writes addr for a socket of the given family and returns
// the address length, or 0 if addr cannot be sent from that socket.
func encodeSockaddr(sa *unix.RawSockaddrInet6, addr netip.AddrPort, ipv6 bool) uint32 {
	ip := addr.Addr()
	port := addr.Port()
	if !ipv6 {
		ip = ip.Unmap()
		if !ip.Is4() {
			return 0
		}
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		sa4.Family = unix.AF_INET
		p := (*[2]byte)(unsafe.Pointer(&sa4.Port))
		p[0], p[1] = byte(port>>8), byte(port)
		sa4.Addr = ip.As4()
		return unix.SizeofSockaddrInet4
	}
	if !ip.Is6() || ip.Is4In6() {
		return 0
	}
	sa.Family = unix.AF_INET6
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	p[0], p[1] = byte(port>>8), byte(port)
	sa.Flowinfo = 0
	sa.Addr = ip.As16()
	sa.Scope_id = 0
	return unix.SizeofSockaddrInet6
}

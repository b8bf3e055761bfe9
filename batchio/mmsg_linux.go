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

	"golang.org/x/sys/unix"
)

// mmsgConn is a UDP socket read and written in batches with
// recvmmsg/sendmmsg into preallocated headers, so steady-state reads and
// writes allocate nothing.
//
// The system calls are made with RawSyscall6 and MSG_DONTWAIT inside
// RawConn.Control (which keeps the descriptor alive against a concurrent
// Close): a non-blocking call that returns at once does not need the
// scheduler, and letting it know (as syscall.Syscall6 does) made the P
// change hands on every long batch.
type mmsgConn struct {
	file  *os.File
	rc    syscall.RawConn
	ipv6  bool
	batch int
	local netip.AddrPort
	// pktinfo: control buffers carry each datagram's local address
	// (Config.PacketInfo), pktinfoSpace bytes per read header and
	// sendCtlSpace per write header (which also holds the GSO size).
	pktinfo bool
	rctl    []byte
	wctl    []byte
	// gso is on while WriteBatch groups datagrams into GSO sends; it goes
	// off for good if the first GSO send fails as if GSO were the cause.
	gso       atomic.Bool
	gsoWorked bool

	// Receive state (recv_linux.go): owner goroutine only.
	rhdrs  []unix.Mmsghdr
	riov   []unix.Iovec
	rnames []unix.RawSockaddrInet6
	rn     int
	rerr   syscall.Errno
	recvFn func(fd uintptr)

	// Wait state (wait_linux.go): owner goroutine only, except
	// wakePending, which Wake sets from any goroutine and WaitRead
	// consumes, and efd, an eventfd that wakes a blocking poll.
	blocking    bool
	waitFn      func(fd uintptr) bool
	pollFn      func(fd uintptr)
	blockFn     func(fd uintptr)
	anyFn       func(fd uintptr)
	any         *anyPoll
	waited      bool
	ready       bool
	pfd         [2]unix.PollFd
	block       time.Duration
	wakePending atomic.Bool
	efd         int
	one         [8]byte
	drain       [8]byte

	// Send state (send_linux.go): owner goroutine only. Header i sends
	// wsegs[i] consecutive entries of wiov: one datagram, or the segments
	// of a GSO send.
	whdrs  []unix.Mmsghdr
	wiov   []unix.Iovec
	wnames []unix.RawSockaddrInet6
	wsegs  []int
	wcount int
	wn     int
	werr   syscall.Errno
	sendFn func(fd uintptr)

	closed atomic.Bool
	stats  struct {
		recvCalls, recvPackets, sendCalls, sendPackets atomic.Uint64
		sendRetries, sendDropped, truncated, waits     atomic.Uint64
		gsoBatches                                     atomic.Uint64
	}
	recvBufGot, sendBufGot   int
	recvBufWant, sendBufWant int
	meminfo                  meminfo // KernelDrops: any goroutine
	// limit is the per-source limit's filter (nil: none); limitErr why
	// one asked for as Optional is not attached.
	limit    *sourceLimiter
	limitErr error
}

var (
	_ Conn          = (*mmsgConn)(nil)
	_ StatsReader   = (*mmsgConn)(nil)
	_ Waker         = (*mmsgConn)(nil)
	_ Shedder       = (*mmsgConn)(nil)
	_ SourceLimiter = (*mmsgConn)(nil)
)

// Listen opens a UDP socket on addr: IPv4 for an IPv4 (or IPv4-mapped)
// address, IPv6-only for an IPv6 one, so serve both families with two
// sockets. On Linux it reads and writes batches with recvmmsg/sendmmsg
// and has every capability (Waker, Shedder, StatsReader, SourceLimiter).
//
// With cfg.XDP on, it is ListenGroup of one conn on the AF_XDP path.
func Listen(addr netip.AddrPort, cfg Config) (Conn, error) {
	if cfg.XDP.Mode != XDPOff {
		conns, err := listenXDP(addr, 1, cfg)
		if err != nil {
			return nil, err
		}
		return conns[0], nil
	}
	c, err := listenMmsg(addr, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func listenMmsg(addr netip.AddrPort, cfg Config) (*mmsgConn, error) {
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
	c := &mmsgConn{
		file:        file,
		rc:          rc,
		ipv6:        ipv6,
		batch:       cfg.BatchSize,
		local:       local,
		recvBufGot:  bufs[0],
		sendBufGot:  bufs[1],
		recvBufWant: max(cfg.RecvBuffer, 0),
		sendBufWant: max(cfg.SendBuffer, 0),
		efd:         -1,
		pktinfo:     cfg.PacketInfo,
		blocking:    cfg.BlockingWait,
	}
	c.gso.Store(!cfg.DisableGSO && probeGSO(fd))
	if l := cfg.SourceLimit; l.Rate > 0 {
		if c.limit, err = attachLimit(fd, ipv6, l); err != nil {
			if !l.Optional {
				file.Close()
				return nil, err
			}
			c.limitErr = err
		}
	}
	if c.blocking {
		if c.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
			file.Close()
			return nil, fmt.Errorf("batchio: eventfd: %w", err)
		}
	}
	c.init()
	return c, nil
}

func (c *mmsgConn) init() {
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
	c.meminfo.fn = c.meminfo.read
	c.waitFn = c.waitOnce
	c.pollFn = c.pollNow
	c.blockFn = c.pollBlock
	c.anyFn = c.pollAnyStep
}

// LocalAddr returns the bound address.
func (c *mmsgConn) LocalAddr() netip.AddrPort { return c.local }

// Stats returns the socket's counters and settings.
func (c *mmsgConn) Stats() Stats {
	return Stats{
		RecvCalls: c.stats.recvCalls.Load(), RecvPackets: c.stats.recvPackets.Load(),
		SendCalls: c.stats.sendCalls.Load(), SendPackets: c.stats.sendPackets.Load(),
		SendRetries: c.stats.sendRetries.Load(), SendDropped: c.stats.sendDropped.Load(),
		GSOBatches: c.stats.gsoBatches.Load(), Truncated: c.stats.truncated.Load(),
		Waits:          c.stats.waits.Load(),
		RecvBufferWant: c.recvBufWant, RecvBufferGot: c.recvBufGot,
		SendBufferWant: c.sendBufWant, SendBufferGot: c.sendBufGot,
		GSO: c.gso.Load(), BlockingWait: c.blocking,
		SourceLimit: c.limit != nil, SourceLimitErr: c.limitErr,
	}
}

// Close closes the socket and wakes a blocked WaitRead.
func (c *mmsgConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	err := c.file.Close() // a poll in progress keeps the descriptor until it returns
	if c.efd >= 0 {
		unix.Close(c.efd)
	}
	if c.limit != nil {
		// The socket's reference frees the program when its last
		// user (a poll in progress) lets go of the descriptor.
		c.limit.close()
	}
	return err
}

// mapErr reports any failure after Close as ErrClosed (an os.File says
// "use of closed file", which has no exported value).
func (c *mmsgConn) mapErr(err error) error {
	if c.closed.Load() || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	return err
}

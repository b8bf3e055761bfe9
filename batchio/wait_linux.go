//go:build linux

package batchio

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// aLongTimeAgo is a read deadline that has passed: setting it makes a
// parked read return at once.
var aLongTimeAgo = time.Unix(1, 0)

var zeroTimespec unix.Timespec

// Wake makes a WaitRead in progress, or the next one, return promptly. It
// may be called from any goroutine.
func (c *mmsgConn) Wake() {
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

// WaitRead blocks until a datagram may be ready, the deadline passes, Wake
// is called, or the socket is closed.
func (c *mmsgConn) WaitRead(deadline time.Time) error {
	if c.closed.Load() {
		return ErrClosed
	}
	c.stats.waits.Add(1)
	if c.blocking {
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

// waitOnce makes RawConn.Read park once on the netpoller: it is called
// before the wait (returns false unless data is already there) and after.
func (c *mmsgConn) waitOnce(fd uintptr) bool {
	if c.waited {
		return true
	}
	c.waited = true
	// Data may be waiting without a fresh edge (the owner stopped draining
	// early); don't park then.
	c.pollNow(fd)
	return c.ready
}

func (c *mmsgConn) pollNow(fd uintptr) {
	c.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	r, _, e := syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&c.pfd[0])), 1,
		uintptr(unsafe.Pointer(&zeroTimespec)), 0, 0, 0)
	c.ready = e == 0 && r > 0
}

// waitBlock is WaitRead with BlockingWait: polls of at most blockPollSlice
// until the socket or the eventfd is readable, the deadline or Close.
func (c *mmsgConn) waitBlock(deadline time.Time) error {
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

// pollBlock waits in ppoll for up to c.block; it blocks the OS thread,
// which is the point of BlockingWait.
func (c *mmsgConn) pollBlock(fd uintptr) {
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

// anyPoll is WaitAny's state over several sockets. The first socket of a
// call keeps it (every socket of the call points to it) and it is reused,
// so a steady-state WaitAny allocates nothing.
type anyPoll struct {
	socks []*mmsgConn
	pfd   []unix.PollFd // the sockets, then the eventfds of BlockingWait ones
	next  int           // the socket pollAnyStep records next
	ts    unix.Timespec
	ready bool
	err   error
	drain [8]byte
}

// waitAny polls several Listen sockets at once: one ppoll on the calling
// OS thread, in slices of blockPollSlice so that Close and a Wake of a
// socket without an eventfd are noticed.
func waitAny(deadline time.Time, conns []Conn) error {
	var p *anyPoll
	for i, c := range conns {
		m, ok := As[*mmsgConn](c)
		if !ok {
			return fmt.Errorf("batchio: WaitAny over %d conns: conn %d (%T) is not a socket opened by Listen (wait on one conn, or on Listen's sockets only): %w",
				len(conns), i, c, errors.ErrUnsupported)
		}
		if p == nil {
			if m.any == nil {
				m.any = &anyPoll{}
			}
			p = m.any
			p.socks = p.socks[:0]
		}
		m.any = p
		p.socks = append(p.socks, m)
	}
	if n := 2 * len(p.socks); len(p.pfd) < n {
		p.pfd = make([]unix.PollFd, n)
	}
	for _, s := range p.socks {
		s.stats.waits.Add(1)
	}
	for {
		for _, s := range p.socks {
			if s.closed.Load() {
				return ErrClosed
			}
			if s.wakePending.Swap(false) {
				return nil
			}
		}
		slice := blockPollSlice
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return nil
			}
			slice = min(left, slice)
		}
		p.ts = unix.NsecToTimespec(int64(slice))
		p.next, p.ready, p.err = 0, false, nil
		// Each socket's Control holds its descriptor open and calls the
		// next one's; the last one polls them all.
		first := p.socks[0]
		if err := first.rc.Control(first.anyFn); err != nil {
			return first.mapErr(err)
		}
		if p.err != nil {
			return p.err
		}
		if p.ready {
			return nil
		}
	}
}

// pollAnyStep runs inside the RawConn.Control of socket p.next: it records
// the descriptor and goes on to the next socket, or polls after the last.
func (c *mmsgConn) pollAnyStep(fd uintptr) {
	p := c.any
	p.pfd[p.next] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	p.next++
	if p.next < len(p.socks) {
		s := p.socks[p.next]
		if err := s.rc.Control(s.anyFn); err != nil {
			p.err = s.mapErr(err)
		}
		return
	}
	n := len(p.socks)
	k := n
	for _, s := range p.socks {
		if s.efd >= 0 {
			p.pfd[k] = unix.PollFd{Fd: int32(s.efd), Events: unix.POLLIN}
			k++
		}
	}
	r, _, e := syscall.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&p.pfd[0])), uintptr(k),
		uintptr(unsafe.Pointer(&p.ts)), 0, 0, 0)
	p.ready = e == 0 && r > 0
	if !p.ready {
		return
	}
	// A fired eventfd is a Wake this wait consumes.
	k = n
	for _, s := range p.socks {
		if s.efd < 0 {
			continue
		}
		if p.pfd[k].Revents != 0 {
			syscall.RawSyscall(unix.SYS_READ, uintptr(s.efd), uintptr(unsafe.Pointer(&p.drain[0])), 8)
			s.wakePending.Store(false)
		}
		k++
	}
}

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

// An xdpConn waits on three descriptors at once (the AF_XDP socket, the
// kernel socket beside it and the wake eventfd) through an epoll instance
// of its own, which Go's netpoller waits on like any socket. Blocking the
// thread in ppoll instead lets the runtime's sysmon take the P away from
// every wait longer than its tick (20 µs) when GOMAXPROCS is 1, and then
// wake every 20 µs itself: a tenth of a pinned load's core went there.

const (
	xdpEvXsk = iota
	xdpEvKern
	xdpEvWake
)

// xskEvents: the AF_XDP socket's entry is edge-triggered. Every poll of
// the instance (the runtime's included) polls the sockets on its ready
// list, and polling an AF_XDP socket in copy mode also sends what its
// transmit ring holds: a level-triggered entry would stay on the list and
// have the socket polled again at every wake-up of the runtime's poller.
// The conn looks at its rings itself before it waits.
const xskEvents = unix.EPOLLIN | unix.EPOLLET

// xdpWaiter is an xdpConn's epoll instance.
type xdpWaiter struct {
	f      *os.File
	rc     syscall.RawConn
	events [3]unix.EpollEvent
	fn     func(fd uintptr) bool
	// Set by poll: which descriptors were ready.
	xsk, kern, wake bool
}

// newXDPWaiter makes the epoll instance over fds (in xdpEv order).
func newXDPWaiter(fds [3]int) (*xdpWaiter, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("batchio: epoll_create1: %w", err)
	}
	for i, fd := range fds {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if i == xdpEvXsk {
			ev.Events = xskEvents
		}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			unix.Close(epfd)
			return nil, fmt.Errorf("batchio: epoll_ctl: %w", err)
		}
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("batchio: epoll: %w", err)
	}
	w := &xdpWaiter{f: os.NewFile(uintptr(epfd), "xdp-epoll")}
	if w.rc, err = w.f.SyscallConn(); err != nil {
		w.f.Close()
		return nil, fmt.Errorf("batchio: epoll: %w", err)
	}
	w.fn = w.poll
	return w, nil
}

// poll reads which descriptors are ready without blocking; false parks
// the caller on the netpoller until the epoll instance is.
func (w *xdpWaiter) poll(fd uintptr) bool {
	w.xsk, w.kern, w.wake = false, false, false
	n, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, fd, uintptr(unsafe.Pointer(&w.events[0])), uintptr(len(w.events)), 0, 0, 0)
	if e != 0 {
		return false
	}
	for _, ev := range w.events[:n] {
		switch ev.Fd {
		case xdpEvXsk:
			w.xsk = true
		case xdpEvKern:
			w.kern = true
		case xdpEvWake:
			w.wake = true
		}
	}
	return n > 0
}

// wait waits until a descriptor is ready or the deadline (zero: none).
func (w *xdpWaiter) wait(deadline time.Time) error {
	if err := w.f.SetReadDeadline(deadline); err != nil {
		return err
	}
	err := w.rc.Read(w.fn)
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	return err
}

func (w *xdpWaiter) close() error { return w.f.Close() }

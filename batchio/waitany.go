package batchio

import (
	"errors"
	"time"
)

// WaitAny blocks until a datagram may be ready on any of conns, the
// deadline passes (nil), or one of them is closed (ErrClosed); a zero
// deadline waits without a time limit. It is for an owner of several
// conns (an IPv4 and an IPv6 socket) that parks on one goroutine.
//
// With one conn it is that conn's WaitRead. Several conns must each be,
// or wrap (Wrapper), a socket opened by Listen on Linux: WaitAny then
// makes one poll(2) over their descriptors on the calling OS thread, in
// slices of 20 ms, so a Close or a Wake of a socket is noticed within one
// slice (at once for BlockingWait sockets, whose Wake writes an eventfd
// in the poll). Wrappers are looked through, so a wrapper's own WaitRead
// logic does not run. Any other mix is an error wrapping
// errors.ErrUnsupported.
func WaitAny(deadline time.Time, conns ...Conn) error {
	switch len(conns) {
	case 0:
		return errors.New("batchio: WaitAny needs at least one conn")
	case 1:
		return conns[0].WaitRead(deadline)
	}
	return waitAny(deadline, conns)
}

package batchio

import (
	"sync"
	"sync/atomic"
	"time"
)

// Parker parks the owner of a Conn whose datagrams other goroutines put in
// place (the portable socket's reader, an in-memory network, WebTransport
// sessions) in its WaitRead: a producer calls Notify after publishing a
// datagram, Wake ends a wait from any goroutine, and Close ends every wait
// for good. One pending notification is enough to wake the owner, who then
// drains everything that has arrived; the deadline's timer is made once
// and reset per wait, so a steady-state wait allocates nothing.
type Parker struct {
	ready     chan struct{} // at most one pending notification
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	timer     *time.Timer // the owner's
	woken     atomic.Bool // a Wake the owner has not seen yet
}

// NewParker returns a Parker with no notification pending.
func NewParker() *Parker {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Parker{ready: make(chan struct{}, 1), done: make(chan struct{}), timer: t}
}

// Notify ends the owner's wait, or the next one; it never blocks.
func (p *Parker) Notify() {
	select {
	case p.ready <- struct{}{}:
	default:
	}
}

// Wake is a Conn's Wake: it ends the wait in progress, or makes the next
// one return at once, even with nothing to read.
func (p *Parker) Wake() {
	p.woken.Store(true)
	p.Notify()
}

// Close makes every wait, current and later, return ErrClosed.
func (p *Parker) Close() { p.closeOnce.Do(func() { close(p.done) }) }

// Wait is a Conn's WaitRead. It returns ErrClosed after Close, and at once
// when a Wake is pending or pending reports datagrams to read; otherwise it
// blocks until Notify, Wake, the deadline (zero: none), end (nil: none) or
// Close. blocked says whether it blocked. A stale notification (for
// datagrams already read) is dropped before pending is asked, so a
// datagram published after that notifies afresh and none is missed.
func (p *Parker) Wait(deadline time.Time, pending func() bool, end <-chan struct{}) (blocked bool, err error) {
	select {
	case <-p.done:
		return false, ErrClosed
	case <-p.ready:
	default:
	}
	if p.woken.Swap(false) || pending() {
		return false, nil
	}
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return false, nil
		}
		// Since Go 1.23 a stopped or reset timer never delivers a
		// stale tick, so the timer needs no draining.
		p.timer.Reset(d)
		defer p.timer.Stop()
		timeout = p.timer.C
	}
	select {
	case <-p.ready:
		p.woken.Store(false) // this wait is the one a Wake ends
	case <-p.done:
		return true, ErrClosed
	case <-end:
	case <-timeout:
	}
	select { // a Close that raced the notification
	case <-p.done:
		return true, ErrClosed
	default:
	}
	return true, nil
}

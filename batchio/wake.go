package batchio

import (
	"sync/atomic"
	"time"
)

// wake is how a conn whose datagrams are put in place by another goroutine
// (the portable socket's reader) parks its owner in WaitRead: the producer
// notifies after publishing a datagram, Wake pokes, Close closes done, and
// a deadline fires a timer that is made once and reset per wait, so a
// steady-state wait allocates nothing.
type wake struct {
	// ready holds at most one pending notification.
	ready chan struct{}
	done  chan struct{} // closed by Close
	timer *time.Timer   // owner goroutine only
	woken atomic.Bool   // a Wake the owner has not seen yet
}

func newWake() wake {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return wake{ready: make(chan struct{}, 1), done: make(chan struct{}), timer: t}
}

// notify never blocks: one pending notification is enough to wake the owner,
// who then drains everything that has arrived.
func (w *wake) notify() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// poke is Wake: it ends the wait in progress, or makes the next one
// return at once. Any goroutine.
func (w *wake) poke() {
	w.woken.Store(true)
	w.notify()
}

// begin starts a WaitRead: it clears a stale notification and reports
// whether a Wake is pending, in which case the owner returns at once.
func (w *wake) begin() bool {
	w.clear()
	return w.woken.Swap(false)
}

// waitRead is a conn's WaitRead: it returns at once when the conn is
// closed, a Wake is pending or waiting() reports datagrams to read, and
// otherwise waits. A wait that Close ends returns ErrClosed.
func (w *wake) waitRead(deadline time.Time, closed *atomic.Bool, waiting func() bool) error {
	if closed.Load() {
		return ErrClosed
	}
	if w.begin() || waiting() {
		return nil
	}
	err := w.wait(deadline)
	if err == nil && closed.Load() {
		err = ErrClosed
	}
	return err
}

// clear discards a pending notification, which may be stale. The owner
// calls it before checking for waiting datagrams and then calling wait: a
// datagram published after that check notifies afresh, so none is missed,
// and a notification for one already drained does not end the next wait
// early.
func (w *wake) clear() {
	select {
	case <-w.ready:
	default:
	}
}

// wait blocks until notify, close or the deadline. The caller has already
// cleared, checked that nothing is waiting to be read and that the conn is
// open.
func (w *wake) wait(deadline time.Time) error {
	if deadline.IsZero() {
		select {
		case <-w.ready:
			w.woken.Store(false) // this wait is the one a Wake ends
			return nil
		case <-w.done:
			return ErrClosed
		}
	}
	d := time.Until(deadline)
	if d <= 0 {
		return nil
	}
	// Since Go 1.23 a stopped or reset timer never delivers a stale tick,
	// so the timer needs no draining.
	w.timer.Reset(d)
	select {
	case <-w.ready:
		w.timer.Stop()
		w.woken.Store(false)
		return nil
	case <-w.done:
		w.timer.Stop()
		return ErrClosed
	case <-w.timer.C:
		return nil
	}
}

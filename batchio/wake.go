package batchio

import "time"

// wake is how a conn whose datagrams are put in place by another goroutine
// (a sender on a MemNetwork, a UDPConn's reader) parks its owner in
// WaitRead: the producer notifies after publishing a datagram, Close closes
// done, and a deadline fires a timer that is made once and reset per wait,
// so a steady-state wait allocates nothing.
type wake struct {
	// ready holds at most one pending notification.
	ready chan struct{}
	done  chan struct{} // closed by Close
	timer *time.Timer   // owner goroutine only
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
		return nil
	case <-w.done:
		w.timer.Stop()
		return ErrClosed
	case <-w.timer.C:
		return nil
	}
}

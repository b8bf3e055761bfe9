package webtransport

import (
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

// parker parks the owner of a conn whose datagrams other goroutines
// deliver (the sessions' readers): one pending notification is enough to
// wake it, Wake sets a flag the next wait sees, Close closes done, and the
// deadline's timer is made once and reset per wait.
type parker struct {
	ready chan struct{}
	woken atomic.Bool
	done  chan struct{}
	timer *time.Timer // the owner's
}

func newParker() parker {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return parker{ready: make(chan struct{}, 1), done: make(chan struct{}), timer: t}
}

// notify never blocks.
func (p *parker) notify() {
	select {
	case p.ready <- struct{}{}:
	default:
	}
}

// Wake ends a WaitRead in progress, or makes the next one return at once.
func (p *parker) Wake() {
	p.woken.Store(true)
	p.notify()
}

// wait is a WaitRead after its closed check: it returns at once when a
// Wake is pending or pending reports datagrams, and otherwise blocks until
// a notification, the deadline (zero: none), end or Close (ErrClosed).
// blocked says whether it waited.
func (p *parker) wait(deadline time.Time, pending func() bool, end <-chan struct{}) (blocked bool, err error) {
	select { // a stale notification
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
		p.timer.Reset(d)
		defer p.timer.Stop()
		timeout = p.timer.C
	}
	select {
	case <-p.ready:
		p.woken.Store(false)
	case <-p.done:
		return true, batchio.ErrClosed
	case <-end:
	case <-timeout:
	}
	return true, nil
}

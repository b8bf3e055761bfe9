package reliable

import (
	"errors"
	"time"
)

// SetTime sets the endpoint's clock without recomputing the estimates: a
// connection's owner calls it before each Send or Receive, so that sends
// and receives are timed to the moment and not to the last Update, which
// it can then run less often (the estimates cost a pass over the RTT
// history and the sent and received windows).
func (e *Endpoint) SetTime(now time.Duration) {
	e.commit()
	e.now = now.Seconds()
}

// ErrPoolInUse: Restart was asked to move an endpoint that still holds
// buffers of its old pool.
var ErrPoolInUse = errors.New("reliable: endpoint holds buffers of its pool; Reset it on the pool's goroutine first")

// Restart makes the endpoint new for another connection at time now, as
// New would, and draws its reassembly buffers from pool from then on (nil
// keeps the current pool). Unlike Reset it also clears the RTT history and
// the estimates, which belong to the old connection. An endpoint moving to
// another pool must have been Reset by its old pool's owner first.
func (e *Endpoint) Restart(pool *Pool, now time.Duration) error {
	if pool != nil && pool != e.pool {
		if e.held != 0 || e.delivered >= 0 {
			return ErrPoolInUse
		}
		if pool.bufferBytes < e.cfg.ReassemblyBufferBytes() {
			return errPoolBuffers(pool.bufferBytes, e.cfg.ReassemblyBufferBytes())
		}
		e.pending.valid = false
		e.frag.reset()
		e.pool = pool
	}
	e.Reset()
	for i := range e.rttHistory {
		e.rttHistory[i] = -1
	}
	e.stats = Stats{}
	e.now = now.Seconds()
	return nil
}

package batchio

// A Conn may do more than read, write and wait. What it can do is asked
// for with As, which also looks through wrappers (test doubles,
// instrumentation) that implement Wrapper.

// Waker is a conn whose WaitRead can be ended from another goroutine (the
// sockets Listen opens can). An application that queued work for a parked
// socket owner, such as a server shard, wakes it with Wake.
type Waker interface {
	// Wake makes a WaitRead in progress, or the next one, return nil
	// promptly. It may be called from any goroutine.
	Wake()
}

// Shedder is a conn that can drop a share of one kind of datagram in the
// kernel, before it is queued on the socket (Listen's sockets on Linux). A
// server under a flood of datagrams it would mostly discard anyway keeps a
// fraction of them: the rest cost the kernel's filter instead of a read, a
// copy and the server's checks, and they can no longer fill the socket's
// queue and push out the datagrams of clients already playing.
type Shedder interface {
	// SetShedding keeps about keep (0 to 1) of the datagrams whose first
	// byte is prefix, chosen at random, and lets every other datagram
	// through. keep >= 1 removes the filter.
	SetShedding(prefix byte, keep float64) error
	// KernelDrops returns how many datagrams the kernel has dropped for
	// the socket: shed, over a source's limit (SourceLimiter), or turned
	// away by a full receive queue.
	KernelDrops() uint64
}

// StatsReader is a conn that counts its system calls and datagrams
// (Listen's sockets).
type StatsReader interface {
	Stats() Stats
}

// Wrapper is a conn built on another one (a fault injector, a simulator,
// instrumentation). Unwrap returns the conn it wraps, so As can find the
// capabilities of the socket underneath.
type Wrapper interface {
	Unwrap() Conn
}

// maxUnwrap bounds the walk down a chain of wrappers, so that a wrapper
// that (wrongly) wraps itself cannot hang As.
const maxUnwrap = 64

// As returns c, or the first conn down its chain of Wrappers, that
// implements T, typically a capability: As[Waker](c), As[Shedder](c),
// As[StatsReader](c). A wrapper that implements T itself is found first.
func As[T any](c Conn) (T, bool) {
	for range maxUnwrap {
		if c == nil {
			break
		}
		if t, ok := c.(T); ok {
			return t, true
		}
		w, ok := c.(Wrapper)
		if !ok {
			break
		}
		c = w.Unwrap()
	}
	var zero T
	return zero, false
}

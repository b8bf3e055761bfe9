package batchio

// TEMPORARY: stand-ins for the #13 batchio API until the batchio branch
// lands. Deleted at merge.

import (
	"errors"
	"time"
)

type Config = MmsgConfig

type Waker interface{ Wake() }

type Wrapper interface{ Unwrap() Conn }

func As[T any](c Conn) (T, bool) {
	for c != nil {
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

func BlockingWait(c Conn) bool {
	m, ok := As[*MmsgConn](c)
	return ok && m.Mode() == RecvBlock
}

func WaitAny(deadline time.Time, conns ...Conn) error {
	if len(conns) == 1 {
		return conns[0].WaitRead(deadline)
	}
	return errors.ErrUnsupported
}

func (f *FaultConn) Unwrap() Conn { return f.Inner() }

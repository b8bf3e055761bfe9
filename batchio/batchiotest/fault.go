package batchiotest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

// ErrInjected is the error a FaultConn injects when its config names none.
var ErrInjected = errors.New("batchiotest: injected fault")

// FaultConfig is the schedule of a FaultConn's injected failures. Each
// ReadBatch or WriteBatch call draws its fate from a PCG seeded with Seed,
// so the same seed and the same sequence of calls give the same faults.
type FaultConfig struct {
	Seed uint64
	// ReadError is the probability that a ReadBatch fails with one of
	// ReadErrors instead of reading; the datagrams stay in the wrapped conn
	// for the next call.
	ReadError float64
	// WriteError is the probability that a WriteBatch hands a random prefix
	// of its messages (possibly none) to the wrapped conn and then fails
	// with one of WriteErrors: the rest are not sent, as when a socket
	// fails mid-batch.
	WriteError float64
	// ShortWrite is the probability that a WriteBatch of two or more
	// messages hands only a random non-empty proper prefix to the wrapped
	// conn and returns its count without an error, as a short sendmmsg
	// would; the caller has to send the rest again. WriteError+ShortWrite
	// must be at most 1.
	ShortWrite float64
	// ReadErrors and WriteErrors are the errors injected, picked uniformly;
	// empty means ErrInjected.
	ReadErrors, WriteErrors []error
}

// Validate reports every out-of-range field.
func (c FaultConfig) Validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		v    float64
	}{{"read error", c.ReadError}, {"write error", c.WriteError}, {"short write", c.ShortWrite}} {
		if !probability(p.v) {
			errs = append(errs, fmt.Errorf("%s %v is not a probability in [0, 1]", p.name, p.v))
		}
	}
	if s := c.WriteError + c.ShortWrite; s > 1 {
		errs = append(errs, fmt.Errorf("write error + short write is %v; want at most 1", s))
	}
	for _, list := range [][]error{c.ReadErrors, c.WriteErrors} {
		for _, e := range list {
			if e == nil {
				errs = append(errs, errors.New("a nil error in the errors to inject"))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("batchiotest: bad fault config: %w", errors.Join(errs...))
	}
	return nil
}

// FaultStats are a FaultConn's counters, readable from any goroutine.
type FaultStats struct {
	ReadCalls, WriteCalls uint64 // calls made to the FaultConn
	ReadErrors            uint64 // ReadBatch calls failed by injection
	WriteErrors           uint64 // WriteBatch calls failed by injection
	ShortWrites           uint64 // WriteBatch calls cut short by injection
	// Failed counts the messages of failed writes that were not handed to
	// the wrapped conn; Cut those that short writes left to the caller.
	Failed, Cut uint64
}

// FaultConn is a test tool: it wraps any Conn and injects read errors,
// write errors and short writes on a seeded schedule, to check that the
// code above a socket survives the failures a real one has and recovers
// when they stop. Faults can be switched off and on at any time
// (SetEnabled); WaitRead, Wake, LocalAddr and Close pass straight through.
//
// Like any Conn it is used by one goroutine at a time (the random stream
// is not locked); SetEnabled, Stats, Wake and Close may be called from any.
type FaultConn struct {
	inner   batchio.Conn
	cfg     FaultConfig
	rng     *rand.Rand
	enabled atomic.Bool
	stats   struct {
		readCalls, writeCalls, readErrors, writeErrors, shortWrites, failed, cut atomic.Uint64
	}
}

var (
	_ batchio.Conn    = (*FaultConn)(nil)
	_ batchio.Wrapper = (*FaultConn)(nil)
	_ batchio.Waker   = (*FaultConn)(nil)
)

// faultStream picks the PCG stream, like simStream.
const faultStream = 0x6a09e667f3bcc909

// NewFaultConn wraps inner with the schedule cfg. Faults are enabled.
func NewFaultConn(inner batchio.Conn, cfg FaultConfig) (*FaultConn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if inner == nil {
		return nil, errors.New("batchiotest: NewFaultConn needs a conn to wrap")
	}
	if len(cfg.ReadErrors) == 0 {
		cfg.ReadErrors = []error{ErrInjected}
	}
	if len(cfg.WriteErrors) == 0 {
		cfg.WriteErrors = []error{ErrInjected}
	}
	f := &FaultConn{inner: inner, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, faultStream))}
	f.enabled.Store(true)
	return f, nil
}

// Unwrap returns the wrapped conn.
func (f *FaultConn) Unwrap() batchio.Conn { return f.inner }

// Wake wakes the wrapped conn, if it can be woken (batchio.Waker).
func (f *FaultConn) Wake() { wakeInner(f.inner) }

// SetEnabled switches fault injection on or off; while off, every call
// passes straight through and no random draw is made.
func (f *FaultConn) SetEnabled(on bool) { f.enabled.Store(on) }

// Stats returns the counters.
func (f *FaultConn) Stats() FaultStats {
	return FaultStats{
		ReadCalls: f.stats.readCalls.Load(), WriteCalls: f.stats.writeCalls.Load(),
		ReadErrors: f.stats.readErrors.Load(), WriteErrors: f.stats.writeErrors.Load(),
		ShortWrites: f.stats.shortWrites.Load(), Failed: f.stats.failed.Load(), Cut: f.stats.cut.Load(),
	}
}

// ReadBatch reads from the wrapped conn unless the schedule fails it.
func (f *FaultConn) ReadBatch(msgs []batchio.Message) (int, error) {
	f.stats.readCalls.Add(1)
	if f.enabled.Load() && f.rng.Float64() < f.cfg.ReadError {
		f.stats.readErrors.Add(1)
		return 0, f.cfg.ReadErrors[f.rng.IntN(len(f.cfg.ReadErrors))]
	}
	return f.inner.ReadBatch(msgs)
}

// WriteBatch writes to the wrapped conn all of msgs, or the prefix the
// schedule allows.
func (f *FaultConn) WriteBatch(msgs []batchio.Message) (int, error) {
	f.stats.writeCalls.Add(1)
	if len(msgs) == 0 || !f.enabled.Load() {
		return f.inner.WriteBatch(msgs)
	}
	u := f.rng.Float64()
	switch {
	case u < f.cfg.WriteError:
		k := f.rng.IntN(len(msgs) + 1)
		injected := f.cfg.WriteErrors[f.rng.IntN(len(f.cfg.WriteErrors))]
		f.stats.writeErrors.Add(1)
		f.stats.failed.Add(uint64(len(msgs) - k))
		if k == 0 {
			return 0, injected
		}
		n, err := f.inner.WriteBatch(msgs[:k])
		if err != nil {
			return n, err
		}
		return n, injected
	case u < f.cfg.WriteError+f.cfg.ShortWrite && len(msgs) > 1:
		k := 1 + f.rng.IntN(len(msgs)-1)
		f.stats.shortWrites.Add(1)
		f.stats.cut.Add(uint64(len(msgs) - k))
		return f.inner.WriteBatch(msgs[:k])
	}
	return f.inner.WriteBatch(msgs)
}

// WaitRead waits on the wrapped conn.
func (f *FaultConn) WaitRead(deadline time.Time) error { return f.inner.WaitRead(deadline) }

// LocalAddr returns the wrapped conn's address.
func (f *FaultConn) LocalAddr() netip.AddrPort { return f.inner.LocalAddr() }

// Close closes the wrapped conn.
func (f *FaultConn) Close() error { return f.inner.Close() }

// wakeInner is a wrapper's Wake: it wakes the conn underneath, if that
// can be woken.
func wakeInner(c batchio.Conn) {
	if w, ok := batchio.As[batchio.Waker](c); ok {
		w.Wake()
	}
}

//go:build js && wasm

package wtconn

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"syscall/js"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// Bounds of a Conn.
const (
	// DefaultQueueSize is Config.QueueSize's default: received datagrams
	// waiting for ReadBatch.
	DefaultQueueSize = 256
	maxQueueSize     = 1 << 14
	// maxSessions bounds the open sessions: the engine's client talks to
	// one server at a time, so more only come from trying a token's next
	// address; the least recently used is closed.
	maxSessions = 4
	// maxPending bounds the datagrams written to a session still opening
	// (they are sent when it is ready; the client resends at 10 Hz anyway).
	maxPending = 16
	// maxOutstanding bounds the writes the browser has not yet settled, so
	// a stalled session cannot grow the browser's queues without limit.
	maxOutstanding = 256
	// reopenAfter is how long a failed or closed session's address is
	// left alone before a write opens a new session to it.
	reopenAfter = time.Second
)

// Config configures a Conn.
type Config struct {
	// Local is the address LocalAddr reports. Only its family matters:
	// the engine's client sends to a token's IPv4 addresses over a conn
	// with an IPv4 local address, IPv6 over IPv6. Default 0.0.0.0:0.
	Local netip.AddrPort
	// Path is the URL path of the server's WebTransport endpoint
	// (default "/netcode").
	Path string
	// CertificateHashes are SHA-256 hashes of the server's certificate
	// (WebTransport's serverCertificateHashes: an ECDSA certificate valid
	// for at most 14 days). Empty: the browser checks the certificate as
	// for any https URL, which then must name the address dialled.
	CertificateHashes [][32]byte
	// QueueSize bounds received datagrams waiting for ReadBatch (default
	// DefaultQueueSize; allowed 1 to 16384). Surplus is dropped and counted.
	QueueSize int
}

// Stats are a Conn's counters.
type Stats struct {
	SessionsOpened, SessionsFailed, SessionsClosed uint64
	// Sent counts datagrams handed to the browser; SendDropped those
	// dropped (no session, too many pending or outstanding).
	Sent, SendDropped uint64
	// QueueDropped counts datagrams that arrived at a full queue;
	// TooLong those longer than a netcode packet.
	QueueDropped, TooLong uint64
}

// Conn is a batchio.Conn over the browser's WebTransport datagrams.
type Conn struct {
	cfg    Config
	q      *queue
	closed chan struct{}
	once   sync.Once

	mu          sync.Mutex
	sessions    []*session
	outstanding int
	stats       Stats
	// settled runs when the browser settles a write. It is never
	// released: writes may settle after Close.
	settled js.Func
	noop    js.Func
}

var _ batchio.Conn = (*Conn)(nil)

type sessionState uint8

const (
	opening sessionState = iota
	open
	closed
)

// session is one WebTransport session to one server address.
type session struct {
	addr     netip.AddrPort
	wt       js.Value
	writer   js.Value
	state    sessionState
	since    time.Time // of the last state change
	used     time.Time
	pending  [][]byte
	scratch  [codec.MaxPacketBytes]byte
	onReady  js.Func
	onClosed js.Func
	onRead   js.Func
	onFail   js.Func
}

// New returns a Conn with no sessions; WriteBatch opens them.
func New(cfg Config) (*Conn, error) {
	if js.Global().Get("WebTransport").IsUndefined() {
		return nil, errors.New("wtconn: this browser has no WebTransport")
	}
	if !cfg.Local.IsValid() {
		cfg.Local = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	}
	if cfg.Path == "" {
		cfg.Path = "/netcode"
	}
	if cfg.Path[0] != '/' {
		return nil, fmt.Errorf("wtconn: Path %q; want one starting with /", cfg.Path)
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.QueueSize < 1 || cfg.QueueSize > maxQueueSize {
		return nil, fmt.Errorf("wtconn: QueueSize %d; allowed 1 to %d (0 means %d)", cfg.QueueSize, maxQueueSize, DefaultQueueSize)
	}
	c := &Conn{
		cfg:    cfg,
		q:      newQueue(cfg.QueueSize, codec.MaxPacketBytes),
		closed: make(chan struct{}),
	}
	c.settled = js.FuncOf(func(js.Value, []js.Value) any {
		c.mu.Lock()
		c.outstanding--
		c.mu.Unlock()
		return nil
	})
	c.noop = js.FuncOf(func(js.Value, []js.Value) any { return nil })
	return c, nil
}

// LocalAddr returns Config.Local.
func (c *Conn) LocalAddr() netip.AddrPort { return c.cfg.Local }

// ReadBatch returns datagrams the sessions have received.
func (c *Conn) ReadBatch(msgs []batchio.Message) (int, error) {
	select {
	case <-c.closed:
		return 0, batchio.ErrClosed
	default:
	}
	return c.q.pop(msgs), nil
}

// WaitRead waits for a datagram, the deadline or Close.
func (c *Conn) WaitRead(deadline time.Time) error {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-c.q.notify:
		// Leave the token for other waiters: ReadBatch tells the truth.
		select {
		case c.q.notify <- struct{}{}:
		default:
		}
		return nil
	case <-c.closed:
		return batchio.ErrClosed
	case <-timeout:
		return nil
	}
}

// Notify returns a channel that receives when a datagram arrives, for a
// loop that waits on more than the conn. It is the channel WaitRead uses.
func (c *Conn) Notify() <-chan struct{} { return c.q.notify }

// WriteBatch sends each datagram on the session to its address, opening
// one if there is none.
func (c *Conn) WriteBatch(msgs []batchio.Message) (int, error) {
	select {
	case <-c.closed:
		return 0, batchio.ErrClosed
	default:
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for i := range msgs {
		m := &msgs[i]
		if m.N < 1 || m.N > len(m.Buf) || !m.Addr.IsValid() {
			c.stats.SendDropped++
			continue
		}
		s := c.session(m.Addr, now)
		s.used = now
		switch {
		case s.state == open && c.outstanding < maxOutstanding:
			c.write(s, m.Buf[:m.N])
		case s.state == opening && len(s.pending) < maxPending:
			s.pending = append(s.pending, append([]byte(nil), m.Buf[:m.N]...))
		default:
			c.stats.SendDropped++
			continue
		}
		n++
	}
	return n, nil
}

// session returns the session to addr, opening one when there is none or
// the last one closed more than reopenAfter ago. c.mu is held.
func (c *Conn) session(addr netip.AddrPort, now time.Time) *session {
	for i, s := range c.sessions {
		if s.addr != addr {
			continue
		}
		if s.state != closed || now.Sub(s.since) < reopenAfter {
			return s
		}
		c.sessions = append(c.sessions[:i], c.sessions[i+1:]...)
		break
	}
	if len(c.sessions) == maxSessions {
		lru := 0
		for i, s := range c.sessions {
			if s.used.Before(c.sessions[lru].used) {
				lru = i
			}
		}
		c.shut(c.sessions[lru], now)
		c.sessions = append(c.sessions[:lru], c.sessions[lru+1:]...)
	}
	s := c.open(addr, now)
	c.sessions = append(c.sessions, s)
	return s
}

// open starts a session to addr. c.mu is held.
func (c *Conn) open(addr netip.AddrPort, now time.Time) *session {
	s := &session{addr: addr, since: now, used: now}
	wt, err := newWebTransport("https://"+addr.String()+c.cfg.Path, c.options())
	if err != nil {
		s.state = closed
		c.stats.SessionsFailed++
		return s
	}
	s.wt = wt
	s.onReady = js.FuncOf(func(_ js.Value, args []js.Value) any {
		c.mu.Lock()
		defer c.mu.Unlock()
		s.onReady.Release() // a promise settles once
		if s.state != opening {
			return nil
		}
		if len(args) > 0 && !args[0].IsUndefined() && args[0].InstanceOf(js.Global().Get("Error")) {
			c.stats.SessionsFailed++
			c.setClosed(s)
			return nil
		}
		c.stats.SessionsOpened++
		s.state, s.since = open, time.Now()
		dg := wt.Get("datagrams")
		s.writer = dg.Get("writable").Call("getWriter")
		c.startReading(s, dg.Get("readable").Call("getReader"))
		for _, p := range s.pending {
			if c.outstanding < maxOutstanding {
				c.write(s, p)
			} else {
				c.stats.SendDropped++
			}
		}
		s.pending = nil
		return nil
	})
	s.onClosed = js.FuncOf(func(js.Value, []js.Value) any {
		c.mu.Lock()
		defer c.mu.Unlock()
		s.onClosed.Release()
		if s.state != closed {
			c.stats.SessionsClosed++
			c.setClosed(s)
		}
		return nil
	})
	wt.Get("ready").Call("then", s.onReady, s.onReady)
	wt.Get("closed").Call("then", s.onClosed, s.onClosed)
	return s
}

// options returns the WebTransport constructor's options.
func (c *Conn) options() js.Value {
	opts := js.Global().Get("Object").New()
	if len(c.cfg.CertificateHashes) == 0 {
		return opts
	}
	hashes := js.Global().Get("Array").New()
	for _, h := range c.cfg.CertificateHashes {
		v := js.Global().Get("Uint8Array").New(len(h))
		js.CopyBytesToJS(v, h[:])
		o := js.Global().Get("Object").New()
		o.Set("algorithm", "sha-256")
		o.Set("value", v)
		hashes.Call("push", o)
	}
	opts.Set("serverCertificateHashes", hashes)
	return opts
}

// newWebTransport constructs a WebTransport, which throws for a bad URL or
// options.
func newWebTransport(url string, opts js.Value) (wt js.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("wtconn: new WebTransport(%s): %v", url, r)
		}
	}()
	return js.Global().Get("WebTransport").New(url, opts), nil
}

// startReading chains reads of the session's datagrams: each resolved read
// queues its datagram and starts the next, so no goroutine waits on the
// browser and no function is made per datagram.
func (c *Conn) startReading(s *session, reader js.Value) {
	s.onRead = js.FuncOf(func(_ js.Value, args []js.Value) any {
		r := args[0]
		if r.Get("done").Bool() {
			s.onRead.Release()
			s.onFail.Release()
			return nil
		}
		v := r.Get("value")
		if n := v.Get("byteLength").Int(); n > len(s.scratch) {
			c.q.countTooLong() // not a netcode packet: nothing is copied
		} else {
			js.CopyBytesToGo(s.scratch[:n], v)
			c.q.push(s.scratch[:n], s.addr)
		}
		reader.Call("read").Call("then", s.onRead, s.onFail)
		return nil
	})
	s.onFail = js.FuncOf(func(js.Value, []js.Value) any {
		s.onRead.Release()
		s.onFail.Release()
		return nil
	})
	reader.Call("read").Call("then", s.onRead, s.onFail)
}

// write hands one datagram to the session's writer. c.mu is held.
func (c *Conn) write(s *session, p []byte) {
	v := js.Global().Get("Uint8Array").New(len(p))
	js.CopyBytesToJS(v, p)
	c.outstanding++
	c.stats.Sent++
	s.writer.Call("write", v).Call("then", c.settled, c.settled)
}

// setClosed marks s closed. c.mu is held.
func (c *Conn) setClosed(s *session) {
	s.state, s.since = closed, time.Now()
	s.pending = nil
}

// shut closes s. c.mu is held.
func (c *Conn) shut(s *session, now time.Time) {
	if s.state != closed {
		c.stats.SessionsClosed++
		s.state, s.since = closed, now
	}
	if !s.wt.IsUndefined() {
		s.wt.Call("close")
		// A close rejects the session's promises; none is unhandled.
		s.wt.Get("closed").Call("catch", c.noop)
	}
}

// Drain waits until the browser has settled every write (the disconnect
// packets of a leaving client), at most until timeout, and then closes the
// sessions. The Conn stays usable: a later write opens a new session.
func (c *Conn) Drain(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		n := c.outstanding
		c.mu.Unlock()
		if n == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for _, s := range c.sessions {
		c.shut(s, now)
	}
	c.sessions = nil
}

// Stats returns the conn's counters.
func (c *Conn) Stats() Stats {
	c.mu.Lock()
	st := c.stats
	c.mu.Unlock()
	st.QueueDropped, st.TooLong = c.q.counts()
	return st
}

// Close closes every session and wakes WaitRead with batchio.ErrClosed.
func (c *Conn) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		now := time.Now()
		for _, s := range c.sessions {
			c.shut(s, now)
		}
		c.sessions = nil
		c.mu.Unlock()
		close(c.closed)
	})
	return nil
}

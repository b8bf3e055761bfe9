package webtransport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	wtgo "github.com/quic-go/webtransport-go"
)

// Session error codes the server closes sessions with (WebTransport
// session error codes, which a browser's WebTransport.closed reports).
const (
	// ErrorCodeStreamRefused: the browser opened a stream; only datagrams
	// are expected.
	ErrorCodeStreamRefused wtgo.SessionErrorCode = 0x4e430001
	// ErrorCodeIdle: nothing from the browser, or from the server, for
	// IdleTimeout.
	ErrorCodeIdle wtgo.SessionErrorCode = 0x4e430002
	// ErrorCodeHandshake: the server did not answer within
	// HandshakeTimeout (a connect token it refused, say).
	ErrorCodeHandshake wtgo.SessionErrorCode = 0x4e430003
	// ErrorCodeShutdown: the server is closing.
	ErrorCodeShutdown wtgo.SessionErrorCode = 0x4e430004
)

// QUIC limits per connection: a session is one bidirectional stream (its
// CONNECT request), and HTTP/3 opens three unidirectional streams (control
// and QPACK); a little room for GREASE. Stream data is not expected, so
// the receive windows are small.
const (
	maxStreamsPerConn    = 8
	maxUniStreamsPerConn = 8
	streamWindow         = 16 << 10
	connWindow           = 64 << 10
)

// Conn is a batchio.Conn over WebTransport sessions: one read and write
// side for all of them, each session a client address (see the package
// documentation). It implements batchio.Waker and batchio.StatsReader.
type Conn struct {
	cfg   Config
	local netip.AddrPort
	hash  [32]byte

	udp *net.UDPConn
	tr  *quic.Transport
	ln  *quic.EarlyListener
	wts *wtgo.Server

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool
	epoch  time.Time

	in   inbox
	park *batchio.Parker

	mu       sync.RWMutex
	sessions map[uint64]*session
	pending  int // sessions not yet answered
	reserved int // sessions being set up, counted in MaxSessions
	quics    int // QUIC connections, handshaking or not
	conns    map[*quic.Conn]*quicConn
	adm      admitter

	st counters
}

var (
	_ batchio.Conn        = (*Conn)(nil)
	_ batchio.Waker       = (*Conn)(nil)
	_ batchio.StatsReader = (*Conn)(nil)
)

// quicConn is a QUIC connection's sessions, so that one that has none
// (after its handshake, or after they closed) is closed in time.
type quicConn struct {
	sessions  int
	idleSince int64 // clock() when sessions last became 0
}

type connKey struct{}

// Listen opens a UDP socket on cfg.Addr and serves WebTransport sessions
// on it at cfg.Path.
func Listen(cfg Config) (*Conn, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Certificate == nil {
		hosts := []string{"localhost", "127.0.0.1", "::1"}
		if a := cfg.Addr.Addr(); !a.IsUnspecified() && !a.IsLoopback() {
			hosts = append(hosts, a.Unmap().String())
		}
		cert, err := DevCertificate(DevCertificateValidity, hosts...)
		if err != nil {
			return nil, err
		}
		cfg.Certificate = &cert
	}
	hash, err := certificateHash(cfg.Certificate)
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.Addr))
	if err != nil {
		return nil, fmt.Errorf("webtransport: listen %v: %w", cfg.Addr, err)
	}
	c := &Conn{cfg: cfg, hash: hash, udp: udp, epoch: time.Now(),
		in: newInbox(cfg.InboxSize, cfg.SessionQueue), park: batchio.NewParker(),
		sessions: make(map[uint64]*session), conns: make(map[*quic.Conn]*quicConn),
		adm: newAdmitter(&cfg)}
	c.local = udp.LocalAddr().(*net.UDPAddr).AddrPort()
	c.ctx, c.cancel = context.WithCancel(context.Background())

	tlsConf := http3.ConfigureTLSConfig(&tls.Config{
		Certificates: []tls.Certificate{*cfg.Certificate},
		MinVersion:   tls.VersionTLS13,
	})
	quicConf := &quic.Config{
		EnableDatagrams:                  true,
		EnableStreamResetPartialDelivery: true,
		HandshakeIdleTimeout:             cfg.HandshakeTimeout,
		// QUIC's own idle timeout is a backstop; the janitor closes
		// silent sessions first, by its rules.
		MaxIdleTimeout:                 2 * max(cfg.IdleTimeout, cfg.HandshakeTimeout),
		MaxIncomingStreams:             maxStreamsPerConn,
		MaxIncomingUniStreams:          maxUniStreamsPerConn,
		InitialStreamReceiveWindow:     streamWindow,
		MaxStreamReceiveWindow:         streamWindow,
		InitialConnectionReceiveWindow: connWindow,
		MaxConnectionReceiveWindow:     connWindow,
	}
	// Retry proves a client's address before any per-IP limit is charged
	// to it, so a spoofed flood cannot spend a real player's budget; it
	// costs a browser one round trip when connecting.
	c.tr = &quic.Transport{Conn: udp,
		VerifySourceAddress: func(net.Addr) bool { return true },
		ConnContext:         c.admitQUIC,
	}
	c.ln, err = c.tr.ListenEarly(tlsConf, quicConf)
	if err != nil {
		udp.Close()
		return nil, fmt.Errorf("webtransport: listen %v: %w", cfg.Addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(cfg.Path, c.handle)
	c.wts = &wtgo.Server{
		H3: &http3.Server{TLSConfig: tlsConf, QUICConfig: quicConf, Handler: mux,
			ConnContext: func(ctx context.Context, qc *quic.Conn) context.Context {
				return context.WithValue(ctx, connKey{}, qc)
			}},
		// handle checks the origin itself, against AllowedOrigins.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	c.wg.Go(c.accept)
	c.wg.Go(c.janitor)
	return c, nil
}

// CertificateHash is the SHA-256 of the certificate's leaf (DER): what a
// page passes in serverCertificateHashes to trust a self-signed
// certificate.
func (c *Conn) CertificateHash() [32]byte { return c.hash }

// LocalAddr is the UDP address QUIC listens on.
func (c *Conn) LocalAddr() netip.AddrPort { return c.local }

// URL is the WebTransport URL of the conn for host (a name or an IP).
func (c *Conn) URL(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is6() && !ip.Is4In6() {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("https://%s:%d%s", host, c.local.Port(), c.cfg.Path)
}

// clock is monotonic nanoseconds since Listen.
func (c *Conn) clock() int64 { return int64(time.Since(c.epoch)) }

// admitQUIC decides on a new QUIC connection from a verified address,
// before its handshake costs anything.
func (c *Conn) admitQUIC(ctx context.Context, info *quic.ClientInfo) (context.Context, error) {
	ip := addrOf(info.RemoteAddr)
	c.mu.Lock()
	r := refuseNone
	switch {
	case c.closed.Load():
		r = refuseClosed
	case c.quics >= c.cfg.MaxSessions:
		r = refuseMaxSessions
	default:
		r = c.adm.admit(ip, time.Now())
	}
	if r == refuseNone {
		c.quics++
	}
	c.mu.Unlock()
	if r != refuseNone {
		c.st.refused[r].Add(1)
		return nil, errRefused
	}
	context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.quics--
		c.mu.Unlock()
	})
	return ctx, nil
}

var errRefused = errors.New("webtransport: refused")

func addrOf(a net.Addr) netip.Addr {
	if u, ok := a.(*net.UDPAddr); ok {
		return u.AddrPort().Addr().Unmap()
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// accept serves each QUIC connection the listener accepts.
func (c *Conn) accept() {
	for {
		qc, err := c.ln.Accept(c.ctx)
		if err != nil {
			return
		}
		c.mu.Lock()
		if c.closed.Load() {
			c.mu.Unlock()
			qc.CloseWithError(0, "closing")
			continue
		}
		c.conns[qc] = &quicConn{idleSince: c.clock()}
		c.mu.Unlock()
		c.wg.Go(func() {
			_ = c.wts.ServeQUICConn(qc)
			<-qc.Context().Done()
			c.mu.Lock()
			delete(c.conns, qc)
			c.mu.Unlock()
		})
	}
}

// originAllowed reports whether a request's Origin is in AllowedOrigins
// (any origin when it is empty).
func (c *Conn) originAllowed(r *http.Request) bool {
	if len(c.cfg.AllowedOrigins) == 0 {
		return true
	}
	o := r.Header.Get("Origin")
	for _, a := range c.cfg.AllowedOrigins {
		if strings.EqualFold(o, a) {
			return true
		}
	}
	return false
}

// handle is the WebTransport endpoint: it admits a session, then reads
// its datagrams until it ends.
func (c *Conn) handle(w http.ResponseWriter, r *http.Request) {
	qc, _ := r.Context().Value(connKey{}).(*quic.Conn)
	if r.Method != http.MethodConnect || qc == nil {
		http.Error(w, "WebTransport only", http.StatusBadRequest)
		return
	}
	if !c.originAllowed(r) {
		c.st.refused[refuseOrigin].Add(1)
		w.WriteHeader(http.StatusForbidden)
		return
	}
	if status := c.reserve(addrOf(qc.RemoteAddr())); status != 0 {
		w.WriteHeader(status)
		return
	}
	ws, err := c.wts.Upgrade(w, r)
	if err != nil {
		c.unreserve()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	s := c.open(ws, qc)
	if s == nil {
		ws.CloseWithError(ErrorCodeShutdown, "closing")
		return
	}
	s.readLoop()
	c.forget(s)
}

// reserve counts a session about to open against the limits, or returns
// the HTTP status refusing it.
func (c *Conn) reserve(ip netip.Addr) int {
	c.mu.Lock()
	r := refuseNone
	switch {
	case c.closed.Load():
		r = refuseClosed
	case len(c.sessions)+c.reserved >= c.cfg.MaxSessions:
		r = refuseMaxSessions
	case c.pending+c.reserved >= c.cfg.MaxPendingSessions:
		r = refusePending
	default:
		r = c.adm.admit(ip, time.Now())
	}
	if r == refuseNone {
		c.reserved++
	}
	c.mu.Unlock()
	if r == refuseNone {
		return 0
	}
	c.st.refused[r].Add(1)
	if r == refuseRate || r == refuseRateIP || r == refuseIPTableFull {
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}

func (c *Conn) unreserve() {
	c.mu.Lock()
	c.reserved--
	c.mu.Unlock()
}

// open makes the session of ws and starts its goroutines; nil if the conn
// closed meanwhile.
func (c *Conn) open(ws *wtgo.Session, qc *quic.Conn) *session {
	now := c.clock()
	s := &session{c: c, wt: ws, qc: qc, addr: nextSessionAddr(),
		send:   make(chan []byte, c.cfg.SendQueue),
		opened: now}
	s.id, _ = sessionID(s.addr)
	s.lastRecv.Store(now)
	c.mu.Lock()
	c.reserved--
	if c.closed.Load() {
		c.mu.Unlock()
		return nil
	}
	c.sessions[s.id] = s
	c.pending++
	if q := c.conns[qc]; q != nil {
		q.sessions++
	}
	c.mu.Unlock()
	c.st.accepted.Add(1)
	c.wg.Go(s.writeLoop)
	c.wg.Go(s.refuseStreams)
	c.wg.Go(s.refuseUniStreams)
	return s
}

// forget removes an ended session: its address is never used again.
func (c *Conn) forget(s *session) {
	s.closed.Store(true)
	s.wt.CloseWithError(0, "")
	c.mu.Lock()
	delete(c.sessions, s.id)
	if !s.answered.Load() {
		c.pending--
	}
	if q := c.conns[s.qc]; q != nil {
		q.sessions--
		if q.sessions == 0 {
			q.idleSince = c.clock()
		}
	}
	c.mu.Unlock()
}

// janitor closes sessions that have gone silent or unanswered, and QUIC
// connections without a session.
func (c *Conn) janitor() {
	tick := min(max(min(c.cfg.HandshakeTimeout, c.cfg.IdleTimeout)/4, 5*time.Millisecond), time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	var closing []*session
	var reasons []closeReason
	var idleConns []*quic.Conn
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		now := c.clock()
		idle, hs := int64(c.cfg.IdleTimeout), int64(c.cfg.HandshakeTimeout)
		closing, reasons, idleConns = closing[:0], reasons[:0], idleConns[:0]
		c.mu.RLock()
		for _, s := range c.sessions {
			if s.closed.Load() {
				continue
			}
			switch {
			case !s.answered.Load() && now-s.opened > hs:
				closing, reasons = append(closing, s), append(reasons, closeHandshake)
			case now-s.lastRecv.Load() > idle,
				s.answered.Load() && now-s.lastSend.Load() > idle:
				closing, reasons = append(closing, s), append(reasons, closeIdle)
			}
		}
		for qc, q := range c.conns {
			if q.sessions == 0 && now-q.idleSince > hs {
				idleConns = append(idleConns, qc)
			}
		}
		c.mu.RUnlock()
		for i, s := range closing {
			s.close(reasons[i])
		}
		for _, qc := range idleConns {
			qc.CloseWithError(0, "no session")
		}
	}
}

// receive takes datagram b from s into the inbox, or drops it.
func (c *Conn) receive(s *session, b []byte) {
	now := c.clock()
	s.lastRecv.Store(now)
	r := dropNone
	switch {
	case len(b) > c.cfg.MaxDatagramSize:
		r = dropOversized
	case !s.rate.take(c.epoch.Add(time.Duration(now)), c.cfg.DatagramsPerSecond, c.cfg.DatagramBurst):
		r = dropRate
	default:
		r = c.in.push(s, b)
	}
	if r != dropNone {
		c.st.dropped[r].Add(1)
		return
	}
	c.park.Notify()
}

// ReadBatch fills msgs with received datagrams, each from its session's
// address.
func (c *Conn) ReadBatch(msgs []batchio.Message) (int, error) {
	if c.closed.Load() {
		return 0, batchio.ErrClosed
	}
	var drops [numDropReasons]uint64
	n := c.in.read(msgs, &drops)
	for r, d := range drops {
		if d > 0 {
			c.st.dropped[r].Add(d)
		}
	}
	if n > 0 {
		c.st.recvPackets.Add(uint64(n))
	}
	return n, nil
}

// WriteBatch queues each message for its session. A message to an address
// that is not an open session's, or to a session whose send queue is
// full, is dropped and counted.
func (c *Conn) WriteBatch(msgs []batchio.Message) (int, error) {
	if c.closed.Load() {
		return 0, batchio.ErrClosed
	}
	now := c.clock()
	sent := 0
	for i := range msgs {
		m := &msgs[i]
		id, ok := sessionID(m.Addr)
		var s *session
		if ok {
			c.mu.RLock()
			s = c.sessions[id]
			c.mu.RUnlock()
		}
		if s == nil || s.closed.Load() {
			c.st.sendNoSession.Add(1)
			continue
		}
		if m.N < 0 || m.N > len(m.Buf) || m.N > maxSendSize {
			c.st.sendTooLarge.Add(1)
			continue
		}
		bp := sendBufs.Get().(*[maxSendSize]byte)
		b := append(bp[:0], m.Buf[:m.N]...)
		select {
		case s.send <- b:
			sent++
			s.lastSend.Store(now)
			if !s.answered.Load() {
				c.answered(s)
			}
		default:
			sendBufs.Put(bp)
			c.st.sendQueueFull.Add(1)
		}
	}
	c.st.sendPackets.Add(uint64(sent))
	return sent, nil
}

// answered marks s as no longer pending: the server has sent to it.
func (c *Conn) answered(s *session) {
	c.mu.Lock()
	if !s.answered.Swap(true) {
		c.pending--
	}
	c.mu.Unlock()
}

// Wake ends a WaitRead in progress, or makes the next one return at once.
func (c *Conn) Wake() { c.park.Wake() }

// WaitRead blocks until a datagram may be waiting, the deadline, Wake or
// Close.
func (c *Conn) WaitRead(deadline time.Time) error {
	if c.closed.Load() {
		return batchio.ErrClosed
	}
	blocked, err := c.park.Wait(deadline, c.in.pending, nil)
	if blocked && err == nil {
		c.st.waits.Add(1)
	}
	return err
}

// Stats reports the datagrams read and sent (RecvPackets, SendPackets),
// and every dropped send in SendDropped. TransportStats has the rest.
func (c *Conn) Stats() batchio.Stats {
	return batchio.Stats{
		RecvPackets: c.st.recvPackets.Load(),
		SendPackets: c.st.sendPackets.Load(),
		SendDropped: c.st.sendNoSession.Load() + c.st.sendQueueFull.Load() + c.st.sendTooLarge.Load() + c.st.sendErrors.Load(),
		Truncated:   c.st.dropped[dropTruncated].Load(),
		Waits:       c.st.waits.Load(),
	}
}

// TransportStats reports the sessions and every refusal and drop by
// reason.
func (c *Conn) TransportStats() Stats {
	st := c.st.snapshot()
	c.mu.RLock()
	st.Sessions, st.Pending, st.Connections = len(c.sessions), c.pending, c.quics
	c.mu.RUnlock()
	return st
}

// Close lets the datagrams the sessions' writers hold leave, for at most
// closeFlush (a server writes its last packets, netcode's disconnects,
// just before it closes its conns), then closes every session and QUIC
// connection and the socket, and returns when every goroutine of the conn
// has ended.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed.Swap(true) {
		c.mu.Unlock()
		return nil
	}
	sessions := make([]*session, 0, len(c.sessions))
	for _, s := range c.sessions {
		sessions = append(sessions, s)
	}
	c.mu.Unlock()
	c.park.Close()
	flushSends(sessions)
	for _, s := range sessions {
		s.wt.CloseWithError(ErrorCodeShutdown, "server closing")
	}
	c.cancel()
	err := c.wts.Close()
	c.ln.Close()
	c.tr.Close()
	c.udp.Close()
	c.wg.Wait()
	return err
}

// closeFlush bounds how long Close waits for queued datagrams, and
// closeLinger how long it then gives QUIC to put them in packets: closing
// a connection drops the datagrams it has not sent.
const (
	closeFlush  = 100 * time.Millisecond
	closeLinger = 10 * time.Millisecond
)

// flushSends waits, up to closeFlush, until no session's writer holds a
// datagram, then lingers so that QUIC sends them.
func flushSends(sessions []*session) {
	if len(sessions) == 0 {
		return
	}
	for deadline := time.Now().Add(closeFlush); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if !slices.ContainsFunc(sessions, (*session).unsent) {
			break
		}
	}
	time.Sleep(closeLinger)
}

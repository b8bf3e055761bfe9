//go:build linux

package bench

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

// Load limits and defaults.
const (
	// MaxLoadClients bounds LoadConfig.Clients (one socket each).
	MaxLoadClients = 1 << 16
	// maxSendBurst is the most payloads one client sends in one wake-up
	// when it is behind its schedule; beyond that it skips sends and counts
	// them as send lag, so that a slow load generator shows up in the report
	// instead of as a burst that distorts the server's numbers.
	maxSendBurst = 32
	// maxLoadShards bounds the histograms: one per group of clients.
	maxLoadShards = 16
	// clientSocketBuffer is each client socket's buffer size.
	clientSocketBuffer = 256 << 10
	// clientQueue is each engine client's receive queue; the goroutine
	// drains it at every wake-up.
	clientQueue = 64
	// connectSpacing paces the start of clients: connectGroup clients per
	// connectSpacing, so that thousands of 1078-byte requests do not
	// overflow the server's socket buffer at once.
	connectGroup   = 64
	connectSpacing = 2 * time.Millisecond
)

// LoadMode selects what the load's clients do.
type LoadMode int

const (
	// LoadEcho: connect once, then send stamped payloads at the rate set by
	// BeginWindow and time their echoes.
	LoadEcho LoadMode = iota
	// LoadHandshake: connect, and as soon as connected disconnect and
	// connect again; the histogram times connect-to-connected.
	LoadHandshake
)

// LoadConfig configures a Load.
type LoadConfig struct {
	// Server is the address the clients connect to (also the address in
	// their connect tokens).
	Server netip.AddrPort
	// PrivateKey and ProtocolID mint the connect tokens; they must be the
	// server's.
	PrivateKey []byte
	ProtocolID uint64
	// Clients is the number of clients, each with its own socket (the
	// server tells clients apart by address).
	Clients int
	// PayloadBytes is the payload size, StampBytes to 1200.
	PayloadBytes int
	// Mode selects echo or handshake load.
	Mode LoadMode
	// Bind is the local address of the client sockets; the zero value is
	// the loopback address of Server's family.
	Bind netip.Addr
	// ClientIDBase is the first client id (0 means 1).
	ClientIDBase uint64
	// TimeoutSeconds is the tokens' connection timeout (0 means 10).
	TimeoutSeconds int32
	// ExpireSeconds is the tokens' life (0 means 600).
	ExpireSeconds int64
	// Logger receives lifecycle events; nil discards.
	Logger *slog.Logger
}

// LoadTotals are a Load's counters over the current window.
type LoadTotals struct {
	Elapsed    time.Duration // since BeginWindow
	Connected  int           // clients connected now
	Sent       uint64
	Received   uint64 // distinct echoes
	Duplicates uint64
	Reordered  uint64
	TooOld     uint64
	Bad        uint64 // echoes without a readable stamp
	SendLag    uint64
	Handshakes uint64 // completed handshakes (LoadHandshake)
	Failures   uint64 // handshakes that ended in an error state
	// Hist is a merged copy of the window's latencies (nanoseconds).
	Hist *hdrhistogram.Histogram
}

// Lost returns Sent - Received, or 0.
func (t *LoadTotals) Lost() uint64 {
	if t.Received >= t.Sent {
		return 0
	}
	return t.Sent - t.Received
}

// LossRatio returns Lost / Sent (0 when nothing was sent).
func (t *LoadTotals) LossRatio() float64 {
	if t.Sent == 0 {
		return 0
	}
	return float64(t.Lost()) / float64(t.Sent)
}

// loadShard holds the counters and histogram of a group of clients. Its
// mutex is taken once per received echo and once per send burst; with
// clients spread over shards it is rarely contended.
type loadShard struct {
	mu   sync.Mutex
	hist *hdrhistogram.Histogram
	LoadTotals
	_ [64]byte // keep shards' hot fields on separate cache lines
}

type loadClient struct {
	idx   int
	conn  *batchio.MmsgConn
	cl    *engine.Client
	token []byte
	shard *loadShard
	pay   []byte // the outgoing payload, stamped in place
	rbuf  []byte
	seq   uint64
	track SeqTracker
	up    bool // counted in Load.connected
	ever  bool // was connected at least once
}

// Load is a set of real netcode clients driving a server. Each client has
// its own socket and goroutine; the goroutine parks in WaitRead with its
// next send time as the deadline, so an echo is timed the moment it wakes
// the goroutine and idle clients cost nothing.
type Load struct {
	cfg     LoadConfig
	log     *slog.Logger
	start   time.Time // the monotonic epoch of payload stamps
	clients []*loadClient
	shards  []*loadShard

	gen      atomic.Uint64 // bumped when the fields below change
	interval atomic.Int64  // ns between sends per client; 0: paused
	winStart atomic.Int64  // window start, ns since start
	winEnd   atomic.Int64  // window end, ns since start; 0: open

	connected atomic.Int64
	stopping  atomic.Bool
	started   bool
	wg        sync.WaitGroup
}

func (c *LoadConfig) normalize() error {
	if !c.Server.IsValid() || c.Server.Port() == 0 {
		return fmt.Errorf("bench: load server address %v is not a valid address with a port", c.Server)
	}
	if c.Clients < 1 || c.Clients > MaxLoadClients {
		return fmt.Errorf("bench: %d clients; want 1 to %d", c.Clients, MaxLoadClients)
	}
	if c.Mode == LoadEcho && (c.PayloadBytes < StampBytes || c.PayloadBytes > codec.MaxPayloadBytes) {
		return fmt.Errorf("bench: payload of %d bytes; want %d to %d", c.PayloadBytes, StampBytes, codec.MaxPayloadBytes)
	}
	if c.Mode != LoadEcho && c.Mode != LoadHandshake {
		return fmt.Errorf("bench: load mode %d; want LoadEcho or LoadHandshake", c.Mode)
	}
	if !c.Bind.IsValid() {
		c.Bind = netip.IPv6Loopback()
		if c.Server.Addr().Unmap().Is4() {
			c.Bind = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		}
	}
	if c.ClientIDBase == 0 {
		c.ClientIDBase = 1
	}
	if c.TimeoutSeconds == 0 {
		c.TimeoutSeconds = 10
	}
	if c.ExpireSeconds == 0 {
		c.ExpireSeconds = 600
	}
	return nil
}

// NewLoad opens the client sockets and mints one connect token per client.
// Start starts the clients.
func NewLoad(cfg LoadConfig) (*Load, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	l := &Load{cfg: cfg, log: cfg.Logger}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	nShards := min(cfg.Clients, maxLoadShards)
	l.shards = make([]*loadShard, nShards)
	for i := range l.shards {
		l.shards[i] = &loadShard{hist: NewHistogram()}
	}
	now := time.Now()
	l.clients = make([]*loadClient, 0, cfg.Clients)
	for i := range cfg.Clients {
		c, err := l.newClient(i, now)
		if err != nil {
			l.closeConns()
			return nil, err
		}
		l.clients = append(l.clients, c)
	}
	return l, nil
}

func (l *Load) newClient(i int, now time.Time) (*loadClient, error) {
	token, err := engine.GenerateConnectToken(engine.TokenParams{
		ProtocolID:      l.cfg.ProtocolID,
		PrivateKey:      l.cfg.PrivateKey,
		ClientID:        l.cfg.ClientIDBase + uint64(i),
		PublicAddresses: []netip.AddrPort{l.cfg.Server},
		ExpireSeconds:   l.cfg.ExpireSeconds,
		TimeoutSeconds:  l.cfg.TimeoutSeconds,
		Now:             now,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: mint token: %w", err)
	}
	conn, err := batchio.ListenMmsg(netip.AddrPortFrom(l.cfg.Bind, 0), batchio.MmsgConfig{
		RecvBuffer: clientSocketBuffer, SendBuffer: clientSocketBuffer,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: client %d socket: %w", i, err)
	}
	cl, err := engine.NewClient(engine.ClientConfig{ReceiveQueueSize: clientQueue}, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	c := &loadClient{
		idx:   i,
		conn:  conn,
		cl:    cl,
		token: token,
		shard: l.shards[i%len(l.shards)],
		pay:   make([]byte, max(l.cfg.PayloadBytes, StampBytes)),
		rbuf:  make([]byte, codec.MaxPayloadBytes),
	}
	for j := StampBytes; j < len(c.pay); j++ {
		c.pay[j] = byte(j)
	}
	return c, nil
}

func (l *Load) closeConns() {
	for _, c := range l.clients {
		c.conn.Close()
	}
}

// Start starts the clients' goroutines; they connect, paced so as not to
// flood the server with requests. It returns at once.
func (l *Load) Start() {
	if l.started {
		return
	}
	l.started = true
	l.start = time.Now()
	l.wg.Add(len(l.clients))
	go func() {
		for i, c := range l.clients {
			if i > 0 && i%connectGroup == 0 {
				time.Sleep(connectSpacing)
			}
			if l.stopping.Load() {
				l.wg.Add(-(len(l.clients) - i))
				return
			}
			go l.run(c)
		}
	}()
}

// WaitConnected waits until every client is connected, the timeout passes,
// or stop is closed, and returns how many are connected.
func (l *Load) WaitConnected(timeout time.Duration, stop <-chan struct{}) int {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		n := l.Connected()
		if n == len(l.clients) || !time.Now().Before(deadline) {
			return n
		}
		select {
		case <-stop:
			return n
		case <-t.C:
		}
	}
}

// Connected returns the number of clients connected now.
func (l *Load) Connected() int { return int(l.connected.Load()) }

// Clients returns the number of clients.
func (l *Load) Clients() int { return len(l.clients) }

// BeginWindow resets the counters and histograms and sets every client's
// send rate (payloads per second; 0 sends nothing) for the window [start,
// start+d); d = 0 leaves the window open until SetRate. Clients spread
// their first sends evenly over one interval after start. Give start a lead
// of at least engine.PacketSendInterval: an idle client notices the new
// window only when it next wakes, which is within that time.
func (l *Load) BeginWindow(rateHz float64, start time.Time, d time.Duration) {
	for _, s := range l.shards {
		s.mu.Lock()
		s.hist.Reset()
		s.LoadTotals = LoadTotals{}
		s.mu.Unlock()
	}
	startNs := int64(start.Sub(l.start))
	l.winStart.Store(startNs)
	l.winEnd.Store(0)
	if d > 0 {
		l.winEnd.Store(startNs + int64(d))
	}
	l.SetRate(rateHz)
}

// SetRate changes the per-client send rate at once, keeping the counters
// and the window's end; 0 stops sending.
func (l *Load) SetRate(rateHz float64) {
	var iv int64
	if rateHz > 0 {
		iv = max(int64(float64(time.Second)/rateHz), 1)
	}
	l.interval.Store(iv)
	l.gen.Add(1)
}

// Totals returns the counters of the current window with a merged copy of
// its histogram.
func (l *Load) Totals() LoadTotals {
	t := LoadTotals{Hist: NewHistogram()}
	for _, s := range l.shards {
		s.mu.Lock()
		t.Sent += s.Sent
		t.Received += s.Received
		t.Duplicates += s.Duplicates
		t.Reordered += s.Reordered
		t.TooOld += s.TooOld
		t.Bad += s.Bad
		t.SendLag += s.SendLag
		t.Handshakes += s.Handshakes
		t.Failures += s.Failures
		t.Hist.Merge(s.hist)
		s.mu.Unlock()
	}
	t.Connected = l.Connected()
	t.Elapsed = max(time.Since(l.start)-time.Duration(l.winStart.Load()), 0)
	return t
}

// ClientsWithLoss returns how many clients lost at least one payload over
// the whole run. Call it after Close.
func (l *Load) ClientsWithLoss() int {
	n := 0
	for _, c := range l.clients {
		if c.track.Lost(c.seq) > 0 {
			n++
		}
	}
	return n
}

// EverConnected returns how many clients were connected at least once.
// Call it after Close.
func (l *Load) EverConnected() int {
	n := 0
	for _, c := range l.clients {
		if c.ever {
			n++
		}
	}
	return n
}

// Close disconnects the clients (each sends its disconnect packets), waits
// for their goroutines and closes the sockets.
func (l *Load) Close() error {
	l.stopping.Store(true)
	l.wg.Wait()
	var errs []error
	for _, c := range l.clients {
		if err := c.conn.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// setUp keeps the connected count in step with the client's state.
func (l *Load) setUp(c *loadClient, up bool) {
	if up == c.up {
		return
	}
	c.up = up
	c.ever = c.ever || up
	if up {
		l.connected.Add(1)
	} else {
		l.connected.Add(-1)
	}
}

// run is one client's goroutine.
func (l *Load) run(c *loadClient) {
	defer l.wg.Done()
	defer l.setUp(c, false)
	now := time.Now()
	if err := c.cl.Connect(c.token, now); err != nil {
		l.log.Warn("bench: connect", "client", c.idx, "err", err)
		return
	}
	if l.cfg.Mode == LoadHandshake {
		l.runHandshakes(c, now)
		return
	}
	var (
		gen       uint64
		interval  time.Duration
		next, end time.Time
	)
	for {
		now = time.Now()
		if l.stopping.Load() {
			c.cl.Disconnect(now)
			return
		}
		c.cl.Update(now)
		connected := c.cl.State() == engine.Connected
		l.setUp(c, connected)
		l.receive(c, now)
		if g := l.gen.Load(); g != gen {
			gen = g
			interval = time.Duration(l.interval.Load())
			// Spread the clients' sends evenly over one interval.
			start := l.start.Add(time.Duration(l.winStart.Load()))
			next = start.Add(interval * time.Duration(c.idx) / time.Duration(len(l.clients)))
			end = time.Time{}
			if e := l.winEnd.Load(); e != 0 {
				end = l.start.Add(time.Duration(e))
			}
		}
		deadline := now.Add(engine.PacketSendInterval)
		if interval > 0 && connected && (end.IsZero() || next.Before(end)) {
			l.send(c, now, interval, &next, end)
			if next.Before(deadline) {
				deadline = next
			}
		}
		if err := c.conn.WaitRead(deadline); err != nil {
			return
		}
	}
}

// receive times and counts every echo waiting in the client's queue.
func (l *Load) receive(c *loadClient, now time.Time) {
	nowNs := int64(now.Sub(l.start))
	s := c.shard
	locked := false
	for {
		n, _, ok := c.cl.ReceivePacket(c.rbuf)
		if !ok {
			break
		}
		if !locked {
			s.mu.Lock()
			locked = true
		}
		sendNs, seq, ok := ReadStamp(c.rbuf[:min(n, len(c.rbuf))])
		if !ok || n != len(c.pay) {
			s.Bad++
			continue
		}
		switch c.track.Observe(seq) {
		case Duplicate:
			s.Duplicates++
			continue
		case Reordered:
			s.Reordered++
		case TooOld:
			s.TooOld++
		}
		s.Received++
		RecordLatency(s.hist, time.Duration(nowNs-sendNs))
	}
	if locked {
		s.mu.Unlock()
	}
}

// send sends the payloads due by now and before end (if not zero), at most
// maxSendBurst of them; if the client is further behind it skips the rest
// and counts them as lag.
func (l *Load) send(c *loadClient, now time.Time, interval time.Duration, next *time.Time, end time.Time) {
	nowNs := int64(now.Sub(l.start))
	sent, lag := uint64(0), uint64(0)
	for !next.After(now) && (end.IsZero() || next.Before(end)) {
		if sent == maxSendBurst {
			behind := now.Sub(*next)/interval + 1
			*next = next.Add(behind * interval)
			lag = uint64(behind)
			break
		}
		PutStamp(c.pay, nowNs, c.seq)
		if c.cl.SendPacket(c.pay) != nil {
			break
		}
		c.seq++
		sent++
		*next = next.Add(interval)
	}
	if sent == 0 && lag == 0 {
		return
	}
	c.cl.Flush()
	s := c.shard
	s.mu.Lock()
	s.Sent += sent
	s.SendLag += lag
	s.mu.Unlock()
}

// runHandshakes connects, disconnects as soon as connected and connects
// again with the same token (a reconnect from the same address continues
// the token's sequences), timing each handshake.
func (l *Load) runHandshakes(c *loadClient, began time.Time) {
	for {
		now := time.Now()
		if l.stopping.Load() {
			c.cl.Disconnect(now)
			return
		}
		c.cl.Update(now)
		st := c.cl.State()
		switch {
		case st == engine.Connected:
			l.setUp(c, true)
			s := c.shard
			s.mu.Lock()
			s.Handshakes++
			RecordLatency(s.hist, now.Sub(began))
			s.mu.Unlock()
			c.cl.Disconnect(now)
			l.setUp(c, false)
			fallthrough
		case st <= engine.Disconnected:
			if st < engine.Disconnected {
				s := c.shard
				s.mu.Lock()
				s.Failures++
				s.mu.Unlock()
			}
			began = now
			if err := c.cl.Connect(c.token, now); err != nil {
				l.log.Warn("bench: reconnect", "client", c.idx, "err", err)
				return
			}
			continue // send the request now
		}
		if err := c.conn.WaitRead(now.Add(engine.PacketSendInterval)); err != nil {
			return
		}
	}
}

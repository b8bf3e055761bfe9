package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/backend"
	"github.com/netcode-go/netcode/engine/health"
	"github.com/netcode-go/netcode/engine/metrics"
)

// memServer is a dedicated server in the test's process: an engine
// server on a loopback socket with the echo game, and /readyz and
// /metrics as netcode-server serves them. Kill closes its socket and
// endpoints under it (no disconnect packets reach anyone, as after
// SIGKILL); Drain runs the drain netcode-server runs on SIGTERM.
type memServer struct {
	name  string
	srv   *engine.Server
	conn  batchio.Conn
	web   *httptest.Server
	grace time.Duration

	stop     atomic.Bool
	loopDone chan struct{}
	once     sync.Once
	done     chan struct{}
	err      error
}

var _ server = (*memServer)(nil)

func startMemServer(t *testing.T, name string, protocol uint64, key []byte, maxClients int, grace time.Duration) *memServer {
	t.Helper()
	conn, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{RecvBuffer: 256 << 10, SendBuffer: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := engine.NewServer(engine.ServerConfig{ProtocolID: protocol, PrivateKey: key, MaxClients: maxClients,
		Logger: slog.New(slog.DiscardHandler)}, conn)
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewCollector(srv))
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler(reg, nil))
	mux.Handle("/readyz", health.Readiness(srv))
	s := &memServer{name: name, srv: srv, conn: conn, web: httptest.NewServer(mux), grace: grace,
		loopDone: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	t.Cleanup(func() { _ = s.Kill() })
	return s
}

// loop is the echo game on the application goroutine.
func (s *memServer) loop() {
	defer close(s.loopDone)
	echo := func(ev *engine.Event) {
		if ev.Kind == engine.EventPayload {
			_ = s.srv.SendPacket(ev.ClientIndex, ev.Payload)
		}
	}
	for !s.stop.Load() {
		s.srv.Poll(echo)
		s.srv.Wait(time.Now().Add(20 * time.Millisecond))
	}
}

// end closes what is left, in the order of a dying process: endpoints,
// socket, then the server's goroutines and the game loop.
func (s *memServer) end(err error) {
	s.once.Do(func() {
		s.web.Close()
		s.conn.Close()
		s.srv.Close()
		s.stop.Store(true)
		<-s.loopDone
		s.err = err
		close(s.done)
	})
}

func (s *memServer) Name() string          { return s.name }
func (s *memServer) Addr() netip.AddrPort  { return s.conn.LocalAddr() }
func (s *memServer) Done() <-chan struct{} { return s.done }
func (s *memServer) Err() error            { return s.err }

func (s *memServer) Kill() error {
	s.end(nil)
	return nil
}

func (s *memServer) Drain() error {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.grace)
		defer cancel()
		s.end(s.srv.Shutdown(ctx))
	}()
	return nil
}

// countingHandler counts a handler's answers: 200s and the rest.
type countingHandler struct {
	h               http.Handler
	issued, refused atomic.Int64
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

func (c *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	c.h.ServeHTTP(sw, r)
	if sw.status == http.StatusOK {
		c.issued.Add(1)
	} else {
		c.refused.Add(1)
	}
}

// TestFleet runs the script's scenario in one process: three servers,
// engine/backend's handler over them with the health directory and bearer
// secrets, 30 players. The busiest server is killed and the next drained;
// every player must come back elsewhere, the drained ones after a clean
// disconnect, and no token fetched after a loss may list the lost server.
func TestFleet(t *testing.T) {
	const (
		players  = 30
		protocol = 0xf1ee7
		timeout  = 2 // seconds: the tokens' connection timeout
	)
	key := make([]byte, 32)
	rand.Read(key)
	grace := 2 * time.Second
	// The health directory's cache and probe timeout: a token issued more
	// than their sum (and a margin) after a server was lost must not list
	// it, which leaves a second of the drain's grace in which a directory
	// that ignored /readyz would be caught.
	const cache, probe = 200 * time.Millisecond, 500 * time.Millisecond

	f := &fleet{ids: newIdentities(players)}
	var targets []backend.HealthTarget
	for i := range 3 {
		s := startMemServer(t, "server-"+string(rune('1'+i)), protocol, key, players, grace)
		f.servers = append(f.servers, s)
		targets = append(targets, backend.HealthTarget{URL: s.web.URL, Server: backend.Server{Public: s.Addr()}})
	}
	secrets, err := backend.ParseBearerSecrets(strings.NewReader(secretsFile(f.ids)))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := backend.NewHealthDirectory(backend.HealthConfig{Targets: targets, CacheFor: cache, Timeout: probe})
	if err != nil {
		t.Fatal(err)
	}
	h, err := backend.NewHandler(backend.Config{ProtocolID: protocol, PrivateKey: key,
		Authenticate: secrets.Authenticate, Directory: dir, TimeoutSeconds: timeout,
		RateLimit: fleetRateLimit})
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingHandler{h: h}
	mux := http.NewServeMux()
	mux.Handle("/token", counted)
	svc := httptest.NewServer(mux)
	defer svc.Close()
	f.tokenURL = svc.URL + "/token"
	f.issued = func() (int, int, error) { return int(counted.issued.Load()), int(counted.refused.Load()), nil }

	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	var out bytes.Buffer
	sc := scenario{Rate: 10, Ramp: time.Second, Warmup: time.Second, Pause: 500 * time.Millisecond,
		Settle: time.Second, Recover: 10 * time.Second, Grace: grace, Churn: 10, Cache: cache + probe + 300*time.Millisecond}
	r, err := run(ctx, f, sc, hc, &out, time.Now())
	if r != nil {
		r.print(&out)
	}
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range r.failures {
		t.Error(msg)
	}
	// The kill must look like one to the players: timeouts, no
	// disconnect packets; the drain the opposite.
	if k := r.killOutcome; k.timedOut == 0 || k.clean > 0 {
		t.Errorf("kill: %d players timed out, %d were disconnected cleanly; want timeouts only", k.timedOut, k.clean)
	}
	if d := r.drainOutcome; d.clean != len(r.drain.affected) {
		t.Errorf("drain: %d of %d players disconnected cleanly", d.clean, len(r.drain.affected))
	}
	if got := len(r.killOutcome.back) + len(r.drainOutcome.back); got != len(r.kill.affected)+len(r.drain.affected) {
		t.Errorf("%d failovers; want %d", got, len(r.kill.affected)+len(r.drain.affected))
	}
	if r.issued < r.connects || r.connects < players+len(r.kill.affected)+len(r.drain.affected) {
		t.Errorf("%d tokens issued, %d connects; want at least %d connects and a token for each",
			r.issued, r.connects, players+len(r.kill.affected)+len(r.drain.affected))
	}
}

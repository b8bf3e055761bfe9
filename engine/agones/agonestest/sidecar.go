// Package agonestest is an in-process fake of the Agones SDK sidecar's REST
// gateway for tests. It answers the documented API (agones
// sdks/swagger/{sdk,beta,alpha}.swagger.json and the REST guide), checks
// the method, path and JSON body of every request against it, keeps the
// GameServer's state, records every call, and can be made to start late,
// fail or hang.
//
// It is written from the documentation alone and shares no code with the
// client it tests, so that a misreading in one is not hidden by the other.
package agonestest

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// Config is the fake GameServer's initial state and the sidecar's start.
type Config struct {
	Name      string    // empty means "local"
	Namespace string    // empty means "default"
	State     string    // empty means "Scheduled"
	Address   string    // empty means "127.0.0.1"
	Addresses []Address // nil means one InternalIP of Address
	Ports     []Port    // nil means {"default", 7777}
	// HealthPeriodSeconds is spec.health.period_seconds (0 means 5).
	HealthPeriodSeconds int32
	Labels, Annotations map[string]string
	Counters            map[string]Counter
	Lists               map[string]List
	PlayerCapacity      int64

	// Down starts the sidecar not listening: connections to Addr are
	// refused until Up, or until the UpAfterDials-th dial through Client.
	Down         bool
	UpAfterDials int
}

// Address is an entry of status.addresses.
type Address struct{ Type, Address string }

// Port is an entry of status.ports.
type Port struct {
	Name string
	Port int32
}

// Counter is a Counter's state.
type Counter struct{ Count, Capacity int64 }

// List is a List's state.
type List struct {
	Capacity int64
	Values   []string
}

// Call is one request the sidecar received.
type Call struct {
	Method string
	Path   string
	Body   string // the request body, cut at 4 KiB
	Status int    // the response status; 0 if the client went away first
	At     time.Time
	seq    uint64
}

// Bounds of what the fake keeps.
const (
	maxCalls      = 4096 // the newest are kept
	maxViolations = 1024
	maxBody       = 64 << 10
	maxCallBody   = 4 << 10
	// MaxListCapacity is Agones' List capacity limit, which the fake
	// enforces like the sidecar.
	MaxListCapacity = 1000
)

// Sidecar is the fake. Its methods are safe for concurrent use.
type Sidecar struct {
	srv       *httptest.Server
	addr      string
	transport *http.Transport

	mu         sync.Mutex
	up, closed bool
	dials      int
	upAfter    int
	fail       int
	hang       chan struct{} // non-nil while hanging; closed to release
	calls      []Call        // ring of the newest maxCalls
	next       int
	seq        uint64
	counts     map[string]int // "METHOD /path" -> calls, never dropped
	violations []string
	gs         gameServer
}

// New starts a fake sidecar on a loopback port (or reserves the port, with
// cfg.Down).
func New(cfg Config) (*Sidecar, error) {
	s := &Sidecar{counts: make(map[string]int), upAfter: cfg.UpAfterDials, gs: newGameServer(cfg)}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.addr = s.srv.Listener.Addr().String()
	t := &http.Transport{}
	if d, ok := http.DefaultTransport.(*http.Transport); ok {
		t = d.Clone()
	}
	t.Proxy = nil
	t.DialContext = s.dial
	s.transport = t
	if cfg.Down {
		// An unstarted httptest server already listens, and the kernel
		// would queue connections; closing it makes them refused.
		s.srv.Listener.Close()
		return s, nil
	}
	s.srv.Start()
	s.up = true
	return s, nil
}

// Start is New for tests: it fails tb on error and closes the sidecar at
// the end of the test.
func Start(tb testing.TB, cfg Config) *Sidecar {
	tb.Helper()
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Addr is the sidecar's host:port, known before it listens.
func (s *Sidecar) Addr() string { return s.addr }

// Client returns an HTTP client that counts its dials to the sidecar (see
// Dials) and brings a Down sidecar up on the UpAfterDials-th one.
func (s *Sidecar) Client() *http.Client { return &http.Client{Transport: s.transport} }

func (s *Sidecar) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	s.mu.Lock()
	s.dials++
	if !s.up && !s.closed && s.upAfter > 0 && s.dials >= s.upAfter {
		if err := s.startLocked(); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	s.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// Dials is how many connections Client has tried to open.
func (s *Sidecar) Dials() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dials
}

// Up starts a Down sidecar listening on Addr.
func (s *Sidecar) Up() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startLocked()
}

func (s *Sidecar) startLocked() error {
	if s.up || s.closed {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("agonestest: listening again on %s: %w", s.addr, err)
	}
	s.srv.Listener = ln
	s.srv.Start()
	s.up = true
	return nil
}

// Fail makes every request answer the HTTP status code (with a gRPC-style
// error body) until Fail(0).
func (s *Sidecar) Fail(code int) {
	s.mu.Lock()
	s.fail = code
	s.mu.Unlock()
}

// Hang makes requests wait, unanswered, until Release or until the client
// gives up.
func (s *Sidecar) Hang() {
	s.mu.Lock()
	if s.hang == nil {
		s.hang = make(chan struct{})
	}
	s.mu.Unlock()
}

// Release answers the hanging requests and stops hanging new ones.
func (s *Sidecar) Release() {
	s.mu.Lock()
	if s.hang != nil {
		close(s.hang)
		s.hang = nil
	}
	s.mu.Unlock()
}

// Close releases hanging requests and stops the sidecar.
func (s *Sidecar) Close() {
	s.Release()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	up := s.up
	s.mu.Unlock()
	if up {
		s.srv.Close()
	}
	s.transport.CloseIdleConnections()
}

// Calls returns the newest recorded calls (up to 4096), oldest first.
func (s *Sidecar) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) < maxCalls {
		return slices.Clone(s.calls)
	}
	return append(slices.Clone(s.calls[s.next:]), s.calls[:s.next]...)
}

// Count is how many requests came for method and path (e.g. "POST",
// "/health"), all of them counted.
func (s *Sidecar) Count(method, path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[method+" "+path]
}

// Violations returns the requests that broke the documented API, each as
// "METHOD /path: what was wrong".
func (s *Sidecar) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.violations)
}

// CheckClean fails tb if any request broke the documented API.
func (s *Sidecar) CheckClean(tb testing.TB) {
	tb.Helper()
	for _, v := range s.Violations() {
		tb.Errorf("agonestest: API violation: %s", v)
	}
}

// State is the GameServer's state ("Scheduled", "Ready", "Reserved",
// "Allocated", "Shutdown").
func (s *Sidecar) State() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gs.state
}

// SetState sets the GameServer's state, as Agones would on an allocation.
func (s *Sidecar) SetState(state string) {
	s.mu.Lock()
	s.gs.state = state
	s.mu.Unlock()
}

// ReserveSeconds is the duration of the last Reserve.
func (s *Sidecar) ReserveSeconds() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gs.reserveSeconds
}

// Labels returns the GameServer's labels, SDK ones with their
// "agones.dev/sdk-" prefix.
func (s *Sidecar) Labels() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.gs.labels)
}

// Annotations returns the GameServer's annotations, as Labels.
func (s *Sidecar) Annotations() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.gs.annotations)
}

// Counter returns a Counter's state.
func (s *Sidecar) Counter(name string) (Counter, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.gs.counters[name]
	if !ok {
		return Counter{}, false
	}
	return *c, true
}

// List returns a List's state.
func (s *Sidecar) List(name string) (List, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.gs.lists[name]
	if !ok {
		return List{}, false
	}
	return List{Capacity: l.Capacity, Values: slices.Clone(l.Values)}, true
}

// Players returns the ids connected through the alpha player tracking, in
// connection order.
func (s *Sidecar) Players() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.gs.players)
}

// PlayerCapacity is the alpha player capacity.
func (s *Sidecar) PlayerCapacity() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gs.playerCap
}

// record adds a call and returns its sequence number for setStatus.
func (s *Sidecar) record(c Call) uint64 {
	s.counts[c.Method+" "+c.Path]++
	s.seq++
	c.seq = s.seq
	if len(s.calls) < maxCalls {
		s.calls = append(s.calls, c)
	} else {
		s.calls[s.next] = c
		s.next = (s.next + 1) % maxCalls
	}
	return c.seq
}

// setStatus sets the status of call seq, if it is still kept.
func (s *Sidecar) setStatus(seq uint64, code int) {
	for i := len(s.calls) - 1; i >= 0; i-- {
		if s.calls[i].seq == seq {
			s.calls[i].Status = code
			return
		}
	}
}

func (s *Sidecar) violate(format string, args ...any) {
	if len(s.violations) < maxViolations {
		s.violations = append(s.violations, fmt.Sprintf(format, args...))
	}
}

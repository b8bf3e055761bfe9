package backend

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// HealthDirectory defaults (for zero HealthConfig fields) and bounds.
const (
	// DefaultHealthTimeout bounds the probe of one server.
	DefaultHealthTimeout = time.Second
	// DefaultHealthCacheFor is how long one round of probes is reused.
	DefaultHealthCacheFor = time.Second
	// DefaultHealthConcurrency is how many servers are probed at once.
	DefaultHealthConcurrency = 8

	maxHealthTargets     = 4096
	maxHealthTimeout     = 30 * time.Second
	maxHealthCacheFor    = time.Minute
	maxHealthConcurrency = 256
	maxReadyzBytes       = 4 << 10
)

// HealthTarget is a server and the base URL of its HTTP endpoints.
type HealthTarget struct {
	// URL is the base of the server's endpoints, such as
	// http://10.0.0.7:9090; the directory GETs URL/readyz, and URL/metrics
	// when /readyz does not carry the load.
	URL string
	// Server is what goes into tokens when the server is chosen.
	Server Server
}

// HealthConfig configures a HealthDirectory.
type HealthConfig struct {
	// Targets are the servers to choose from (1 to 4096).
	Targets []HealthTarget
	// Client makes the requests (nil: a client with no proxy and no
	// redirects). Its Timeout, if any, applies as well as Timeout.
	Client *http.Client
	// Timeout bounds both requests to one server (default 1 s; allowed
	// up to 30 s). A server that does not answer in time is skipped.
	Timeout time.Duration
	// CacheFor is how long one round of probes is reused (default 1 s;
	// allowed up to 1 min; negative: probe on every call).
	CacheFor time.Duration
	// Concurrency is how many servers are probed at once (default 8;
	// allowed 1 to 256).
	Concurrency int
	// Logger receives why a server was skipped (nil: no logging).
	Logger *slog.Logger
	// Now is the clock for the cache (nil: time.Now).
	Now func() time.Time
}

// HealthDirectory offers the servers that say they are ready and have free
// slots. For each server it GETs URL/readyz: 200 means ready (any other
// status, such as 503 while draining, or no answer, means skip), and its
// body's connected_clients and max_clients lines (engine/health) give the
// load. A server whose /readyz carries no load is asked URL/metrics in the
// Prometheus text format (the gauges netcode_connected_clients, summed
// over its series, and netcode_max_clients); if that fails too, the
// server is ready with unknown load, not gone. Full servers are skipped.
//
// The first server of each answer is drawn at random, weighted by free
// slots less the offers made since the last probe, so that the players
// of a lost server spread over the survivors in proportion to their room;
// a server is never offered first more times than it had free slots
// between two probes. The rest of the answer are the other servers with
// room, most free first, then those of unknown load (which are offered
// first only when no known server has room).
//
// Probes run on demand, inside the Servers call that finds the cache
// stale; concurrent calls wait for that round instead of starting their
// own. Nothing runs between calls, so there is nothing to close. Each
// server dropped (not ready, no answer) or restored is logged at info,
// once per transition.
type HealthDirectory struct {
	cfg     HealthConfig
	targets []healthTarget
	wasUp   []bool // per target, at the last round; only the round's runner touches it
	randN   func(n int64) int64

	mu       sync.Mutex
	view     []offer       // the last round's servers with room or unknown load, most free first
	states   []ServerState // the last round's result per target, Offered left 0
	probedAt time.Time     // when the last round ended
	round    chan struct{} // closed when the running round ends; nil when none runs
}

type healthTarget struct {
	readyz, metrics string
	server          Server
}

var _ Directory = (*HealthDirectory)(nil)

// NewHealthDirectory checks cfg and returns a directory. It probes nothing
// until the first Servers call.
func NewHealthDirectory(cfg HealthConfig) (*HealthDirectory, error) {
	if n := len(cfg.Targets); n < 1 || n > maxHealthTargets {
		return nil, fmt.Errorf("backend: health directory: %d targets; allowed 1 to %d", n, maxHealthTargets)
	}
	if !orDefault(&cfg.Timeout, DefaultHealthTimeout, 0, maxHealthTimeout) {
		return nil, fmt.Errorf("backend: health directory: Timeout %v; allowed up to %v (0 means %v)", cfg.Timeout, maxHealthTimeout, DefaultHealthTimeout)
	}
	if cfg.CacheFor == 0 {
		cfg.CacheFor = DefaultHealthCacheFor
	}
	if cfg.CacheFor > maxHealthCacheFor {
		return nil, fmt.Errorf("backend: health directory: CacheFor %v; allowed up to %v (0 means %v, negative: no cache)", cfg.CacheFor, maxHealthCacheFor, DefaultHealthCacheFor)
	}
	if !orDefault(&cfg.Concurrency, DefaultHealthConcurrency, 1, maxHealthConcurrency) {
		return nil, fmt.Errorf("backend: health directory: Concurrency %d; allowed 1 to %d (0 means %d)", cfg.Concurrency, maxHealthConcurrency, DefaultHealthConcurrency)
	}
	if cfg.Client == nil {
		cfg.Client = newHTTPClient(nil)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d := &HealthDirectory{cfg: cfg, wasUp: make([]bool, len(cfg.Targets)), randN: rand.Int64N}
	for i := range d.wasUp {
		d.wasUp[i] = true // a server down at the first round is logged as dropped
	}
	for i, t := range cfg.Targets {
		u, err := url.Parse(t.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("backend: health directory: target %d: URL %q; want http:// or https://host[:port][/path] with no query", i, t.URL)
		}
		if err := t.Server.check(); err != nil {
			return nil, fmt.Errorf("backend: health directory: target %d: %w", i, err)
		}
		base := strings.TrimSuffix(u.String(), "/")
		d.targets = append(d.targets, healthTarget{readyz: base + "/readyz", metrics: base + "/metrics", server: t.Server})
	}
	cfg.Targets = nil
	return d, nil
}

// Servers appends up to MaxServers ready servers with free slots to dst,
// the first drawn by free slots, the rest most free first. A caller that
// finds the cache stale runs a round of probes (bounded by Timeout,
// whatever its ctx) and callers arriving meanwhile wait for that round, or
// for their ctx.
func (d *HealthDirectory) Servers(ctx context.Context, dst []Server) ([]Server, error) {
	d.mu.Lock()
	switch {
	case d.round != nil:
		round := d.round
		d.mu.Unlock()
		select {
		case <-round:
		case <-ctx.Done():
			return dst, ctx.Err()
		}
		d.mu.Lock()
	case d.probedAt.IsZero() || d.cfg.CacheFor < 0 || d.cfg.Now().Sub(d.probedAt) >= d.cfg.CacheFor:
		round := make(chan struct{})
		d.round = round
		d.mu.Unlock()
		// The round has its own deadline, not ctx: its result is shared
		// with every caller waiting for it.
		view, states := d.probeAll()
		d.mu.Lock()
		d.view, d.states, d.probedAt, d.round = view, states, d.cfg.Now(), nil
		close(round)
	}
	defer d.mu.Unlock()
	return pick(d.view, d.randN, dst)
}

// ServerState is one server as the directory saw it at its last probe.
type ServerState struct {
	Server Server
	// Up: it answered ready.
	Up bool
	// Free is its free slots then: -1 when its load is unknown, 0 when it
	// is down or full.
	Free int64
	// Offered counts the tokens that named it first since.
	Offered int64
}

// States appends every target's state, in the configured order, to dst
// (nothing before the first probe), for metrics and status pages; it
// probes nothing.
func (d *HealthDirectory) States(dst []ServerState) []ServerState {
	d.mu.Lock()
	defer d.mu.Unlock()
	start := len(dst)
	dst = append(dst, d.states...)
	for _, o := range d.view {
		dst[start+o.target].Offered = o.offered
	}
	return dst
}

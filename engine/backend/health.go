package backend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
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
	// http://10.0.0.7:9090; the directory GETs URL/readyz and URL/metrics.
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
// slots, most free slots first. For each server it GETs URL/readyz (200
// means ready; any other status, such as 503 while draining, or no answer,
// means skip) and then URL/metrics in the Prometheus text format, reading
// the gauges netcode_connected_clients (summed over its series, one per
// shard) and netcode_max_clients. Full servers and servers whose metrics do
// not parse are skipped; ties keep the configured order.
//
// Probes run on demand, inside the Servers call that finds the cache
// stale; concurrent calls wait for that round instead of starting their
// own. Nothing runs between calls, so there is nothing to close.
type HealthDirectory struct {
	cfg     HealthConfig
	targets []healthTarget

	mu       sync.Mutex
	ranked   []Server      // the last round's choice, best first
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
	d := &HealthDirectory{cfg: cfg}
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
// most free slots first. A caller that finds the cache stale runs a round
// of probes (bounded by Timeout, whatever its ctx) and callers arriving
// meanwhile wait for that round, or for their ctx.
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
		ranked := d.probeAll()
		d.mu.Lock()
		d.ranked, d.probedAt, d.round = ranked, d.cfg.Now(), nil
		close(round)
	}
	ranked := d.ranked // replaced, never modified, by later rounds
	d.mu.Unlock()
	if len(ranked) == 0 {
		return dst, ErrNoServers
	}
	return append(dst, ranked...), nil
}

type probeResult struct {
	index int
	free  int64
}

// probeAll probes every target, Concurrency at a time, and returns the
// ready ones with free slots, most free first.
func (d *HealthDirectory) probeAll() []Server {
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Timeout)
	defer cancel()
	results := make([]probeResult, len(d.targets))
	sem := make(chan struct{}, d.cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range d.targets {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			free, err := d.probe(ctx, &d.targets[i])
			if err != nil {
				d.cfg.Logger.Debug("server skipped", slog.String("server", d.targets[i].server.Public.String()), slog.String("reason", err.Error()))
				free = 0
			}
			results[i] = probeResult{index: i, free: free}
		})
	}
	wg.Wait()
	results = slices.DeleteFunc(results, func(r probeResult) bool { return r.free <= 0 })
	slices.SortStableFunc(results, func(a, b probeResult) int { return cmp.Compare(b.free, a.free) })
	ranked := make([]Server, 0, min(len(results), MaxServers))
	for _, r := range results[:min(len(results), MaxServers)] {
		ranked = append(ranked, d.targets[r.index].server)
	}
	return ranked
}

// errNotReady marks a server whose /readyz did not answer 200.
var errNotReady = errors.New("not ready")

// probe returns a server's free slots.
func (d *HealthDirectory) probe(ctx context.Context, t *healthTarget) (int64, error) {
	body, err := d.get(ctx, t.readyz, maxReadyzBytes)
	if err != nil {
		return 0, fmt.Errorf("readyz: %w", err)
	}
	drain(body)
	body, err = d.get(ctx, t.metrics, maxMetricsBytes)
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	defer drain(body)
	load, err := parseMetrics(body)
	if err != nil {
		return 0, err
	}
	if load.connected >= load.max {
		return 0, fmt.Errorf("full: %d of %d slots taken", load.connected, load.max)
	}
	return load.max - load.connected, nil
}

// get GETs url and returns its body if the status is 200.
func (d *HealthDirectory) get(ctx context.Context, url string, limit int64) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		drain(resp.Body)
		return nil, fmt.Errorf("%w: status %d", errNotReady, resp.StatusCode)
	}
	return limitedBody{io.LimitReader(resp.Body, limit+1), resp.Body}, nil
}

type limitedBody struct {
	io.Reader
	io.Closer
}

// drain reads a little of a body and closes it, so the connection can be
// reused when the rest is short.
func drain(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 4<<10))
	body.Close()
}

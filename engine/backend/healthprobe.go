package backend

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
)

// probeResult is what one probe learnt of a server.
type probeResult struct {
	err   error // not ready, no answer: the server is skipped
	known bool  // the load is known; else the server is ready with unknown load
	free  int64 // free slots, when known
}

// probeAll probes every target, Concurrency at a time, logs the servers
// dropped or restored since the last round, and returns the ready ones
// with room or unknown load, most free first, then the unknown ones, each
// group in the configured order; and every target's state.
func (d *HealthDirectory) probeAll() ([]offer, []ServerState) {
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Timeout)
	defer cancel()
	results := make([]probeResult, len(d.targets))
	sem := make(chan struct{}, d.cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range d.targets {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = d.probe(ctx, &d.targets[i])
		})
	}
	wg.Wait()
	var view []offer
	states := make([]ServerState, len(results))
	for i, r := range results {
		d.logTransition(i, r)
		st := &states[i]
		st.Server, st.Up = d.targets[i].server, r.err == nil
		switch {
		case r.err != nil:
			d.cfg.Logger.Debug("server skipped", slog.String("server", d.targets[i].server.Public.String()), slog.String("reason", r.err.Error()))
		case !r.known:
			st.Free = -1
			view = append(view, offer{server: st.Server, target: i, free: -1})
		case r.free > 0:
			st.Free = r.free
			view = append(view, offer{server: st.Server, target: i, free: r.free})
		}
	}
	slices.SortStableFunc(view, func(a, b offer) int { return cmp.Compare(b.free, a.free) })
	return view, states
}

// logTransition logs a server that went from answering ready to not, or
// back, once per change.
func (d *HealthDirectory) logTransition(i int, r probeResult) {
	up := r.err == nil
	if d.wasUp[i] == up {
		return
	}
	d.wasUp[i] = up
	srv := slog.String("server", d.targets[i].server.Public.String())
	if !up {
		d.cfg.Logger.Info("health directory: server dropped", srv, slog.String("reason", r.err.Error()))
		return
	}
	free := slog.String("free", "unknown")
	if r.known {
		free = slog.Int64("free", r.free)
	}
	d.cfg.Logger.Info("health directory: server restored", srv, free)
}

// errNotReady marks a server whose /readyz did not answer 200.
var errNotReady = errors.New("not ready")

// probe asks a server whether it is ready and for its load: from /readyz's
// body, else from /metrics, else unknown.
func (d *HealthDirectory) probe(ctx context.Context, t *healthTarget) probeResult {
	body, err := d.get(ctx, t.readyz, maxReadyzBytes)
	if err != nil {
		return probeResult{err: fmt.Errorf("readyz: %w", err)}
	}
	load, ok := parseReadyz(body)
	drain(body)
	if !ok {
		if load, err = d.metricsLoad(ctx, t); err != nil {
			d.cfg.Logger.Debug("server ready with unknown load", slog.String("server", t.server.Public.String()), slog.String("reason", err.Error()))
			return probeResult{}
		}
	}
	return probeResult{known: true, free: max(load.max-load.connected, 0)}
}

// metricsLoad reads the load from a server's /metrics.
func (d *HealthDirectory) metricsLoad(ctx context.Context, t *healthTarget) (serverLoad, error) {
	body, err := d.get(ctx, t.metrics, maxMetricsBytes)
	if err != nil {
		return serverLoad{}, fmt.Errorf("metrics: %w", err)
	}
	defer drain(body)
	return parseMetrics(body)
}

// Names of /readyz's load lines (engine/health.LoadConnected and LoadMax).
var (
	readyzConnected = []byte("connected_clients")
	readyzMax       = []byte("max_clients")
)

// parseReadyz reads the connected_clients and max_clients lines of a
// /readyz body; ok is false unless both are there, once each, and sane.
func parseReadyz(r io.Reader) (load serverLoad, ok bool) {
	sc := bufio.NewScanner(io.LimitReader(r, maxReadyzBytes))
	var seenConnected, seenMax int
	for sc.Scan() {
		name, value, found := bytes.Cut(sc.Bytes(), []byte(" "))
		if !found {
			continue
		}
		n, err := strconv.ParseInt(string(value), 10, 64)
		switch {
		case bytes.Equal(name, readyzConnected):
			load.connected, seenConnected = n, seenConnected+1
		case bytes.Equal(name, readyzMax):
			load.max, seenMax = n, seenMax+1
		default:
			continue
		}
		if err != nil {
			return load, false
		}
	}
	ok = sc.Err() == nil && seenConnected == 1 && seenMax == 1 &&
		load.connected >= 0 && load.max > 0 && load.max <= maxGaugeValue && load.connected <= maxGaugeValue
	return load, ok
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

package agones

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine/agones/agonestest"
)

const (
	tick     = 3 * time.Millisecond // health and sync periods in tests
	deadline = 10 * time.Second     // liveness bound for calls that must return
)

func testLifecycleConfig(mode Tracking) LifecycleConfig {
	return LifecycleConfig{HealthInterval: tick, SyncInterval: tick, Tracking: mode}
}

// sidecarPlayers reads what the sidecar holds for mode: the ids (nil for a
// Counter), the count and the capacity.
func sidecarPlayers(sc *agonestest.Sidecar, mode Tracking) ([]string, int64, int64) {
	if mode == TrackCounter {
		c, _ := sc.Counter(DefaultTrackingName)
		return nil, c.Count, c.Capacity
	}
	ids, c := setState(sc, mode)
	return ids, int64(len(ids)), c
}

func waitPlayers(t *testing.T, sc *agonestest.Sidecar, mode Tracking, capacity int64, ids ...uint64) {
	t.Helper()
	var want []string
	for _, id := range ids {
		want = append(want, strconv.FormatUint(id, 10))
	}
	slices.Sort(want)
	waitFor(t, "the sidecar to hold players "+strings.Join(want, ",")+" of "+strconv.FormatInt(capacity, 10), func() bool {
		got, n, c := sidecarPlayers(sc, mode)
		return n == int64(len(ids)) && c == capacity && (mode == TrackCounter || slices.Equal(got, want))
	})
}

// TestLifecycleSequence is the whole lifecycle against a late sidecar:
// refused connections are retried, then Ready, periodic Health only while
// the server is live, players and capacity following connects and
// disconnects, and Shutdown at the end of the drain.
func TestLifecycleSequence(t *testing.T) {
	for _, mode := range []Tracking{TrackCounter, TrackList, TrackPlayers} {
		t.Run(mode.String(), func(t *testing.T) { testSequence(t, mode) })
	}
}

func testSequence(t *testing.T, mode Tracking) {
	checkNoLeak(t)
	sc := agonestest.Start(t, agonestest.Config{
		Down:         true,
		UpAfterDials: 4,
		Counters:     map[string]agonestest.Counter{"players": {}},
		Lists:        map[string]agonestest.List{"players": {}},
	})
	sdk := newSDK(t, sc, Config{})
	srv := newFakeServer(8, 101)
	cfg := testLifecycleConfig(mode)
	cfg.Labels = map[string]string{"netcode": "v1"}
	cfg.Annotations = map[string]string{"build": "test build"}
	l, err := NewLifecycle(sdk, srv, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}

	// Late sidecar: refused three times, then Ready.
	waitReady(t, l)
	if sc.Dials() < 4 || sc.State() != StateReady {
		t.Fatalf("%d dials, state %q; want 4 or more, Ready", sc.Dials(), sc.State())
	}
	if first := sc.Calls()[0]; first.Method != "POST" || first.Path != "/ready" {
		t.Fatalf("first request %s %s; want POST /ready", first.Method, first.Path)
	}
	if st := l.Stats(); !st.Ready || st.Failures < 3 || !strings.Contains(st.LastError, "refused") {
		t.Errorf("stats %+v; want Ready after 3 or more refused attempts", st)
	}

	// Periodic Health.
	waitFor(t, "3 Health pings", func() bool { return sc.Count("POST", "/health") >= 3 })

	// Players follow connects and disconnects, capacity too.
	waitPlayers(t, sc, mode, 8, 101)
	srv.connect(102, 103)
	waitPlayers(t, sc, mode, 8, 101, 102, 103)
	srv.disconnect(102)
	waitPlayers(t, sc, mode, 8, 101, 103)
	srv.setCapacity(6)
	waitPlayers(t, sc, mode, 6, 101, 103)
	srv.connect(104)
	srv.disconnect(101)
	waitPlayers(t, sc, mode, 6, 103, 104)

	// Not live: Health stops, so Agones would mark the server Unhealthy.
	skipped := l.Stats().HealthSkipped
	srv.setLive(false)
	waitFor(t, "a skipped Health", func() bool { return l.Stats().HealthSkipped > skipped })
	pings := sc.Count("POST", "/health")
	skipped = l.Stats().HealthSkipped
	waitFor(t, "more skipped Health periods", func() bool { return l.Stats().HealthSkipped >= skipped+5 })
	if n := sc.Count("POST", "/health"); n != pings {
		t.Errorf("%d Health pings while not live", n-pings)
	}
	srv.setLive(true)
	waitFor(t, "Health to resume", func() bool { return sc.Count("POST", "/health") > pings })

	// Metadata was set once after Ready.
	if v := sc.Labels()[MetadataPrefix+"netcode"]; v != "v1" {
		t.Errorf("label %q; want v1", v)
	}
	if v := sc.Annotations()[MetadataPrefix+"build"]; v != "test build" {
		t.Errorf("annotation %q", v)
	}

	// Shutdown at the end of the drain, and nothing after it.
	sctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	if err := l.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if sc.State() != StateShutdown || !l.Stats().Shutdown {
		t.Errorf("state %q, stats %+v; want Shutdown", sc.State(), l.Stats())
	}
	noLifecycleGoroutines(t, "Shutdown")
	n := len(sc.Calls())
	time.Sleep(10 * tick)
	calls := sc.Calls()
	if last := calls[len(calls)-1]; len(calls) != n || last.Path != "/shutdown" {
		t.Errorf("requests after Shutdown: %+v", calls[n-1:])
	}
	if i, j := slices.IndexFunc(calls, func(c agonestest.Call) bool { return c.Path == "/ready" }), slices.IndexFunc(calls, func(c agonestest.Call) bool { return c.Path == "/health" }); i < 0 || j < i {
		t.Errorf("Health (call %d) before Ready (call %d)", j, i)
	}
	sc.CheckClean(t)
}

// logBuffer collects log lines at Warn and above.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), sub)
}

// TestLifecycleFailingSidecar: a sidecar answering errors delays Ready and
// loses pings, but the server's calls return, the errors are counted and
// logged once per streak, and the Lifecycle recovers with the sidecar.
func TestLifecycleFailingSidecar(t *testing.T) {
	checkNoLeak(t)
	sc := agonestest.Start(t, agonestest.Config{Lists: map[string]agonestest.List{"players": {}}})
	sc.Fail(500)
	var logs logBuffer
	cfg := testLifecycleConfig(TrackList)
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := newFakeServer(4, 1)
	l, err := NewLifecycle(newSDK(t, sc, Config{}), srv, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "5 failed Ready attempts", func() bool { return l.Stats().Failures >= 5 })
	select {
	case <-l.Ready():
		t.Fatal("Ready while the sidecar fails")
	default:
	}
	st := l.Stats()
	if st.Ready || st.Failures < 5 || !strings.Contains(st.LastError, "Ready") || !strings.Contains(st.LastError, "HTTP 500") {
		t.Errorf("stats %+v; want failures naming Ready and HTTP 500", st)
	}
	if n := logs.count("op=Ready"); n != 1 {
		t.Errorf("%d warnings for a streak of %d Ready failures; want 1", n, st.Failures)
	}

	sc.Fail(0)
	waitReady(t, l)
	waitPlayers(t, sc, TrackList, 4, 1)

	// Failing after Ready: pings and syncs fail, and come back.
	sc.Fail(503)
	failures := l.Stats().Failures
	waitFor(t, "failures after Ready", func() bool { return l.Stats().Failures >= failures+5 })
	srv.connect(2)
	sc.Fail(0)
	pings := l.Stats().HealthSent
	waitFor(t, "Health to recover", func() bool { return l.Stats().HealthSent > pings })
	waitPlayers(t, sc, TrackList, 4, 1, 2)

	// Shutdown against a failing sidecar returns with its context.
	sc.Fail(500)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	within(t, deadline, "Shutdown", func() { err = l.Shutdown(ctx) })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("Shutdown: %v; want the deadline and the last error", err)
	}
	within(t, deadline, "Close", func() { l.Close() })
	noLifecycleGoroutines(t, "Close")
	sc.CheckClean(t)
}

// TestLifecycleHangingSidecar: a sidecar that never answers blocks no
// Lifecycle method past its context, and Close returns at once.
func TestLifecycleHangingSidecar(t *testing.T) {
	for _, when := range []string{"before Ready", "after Ready"} {
		t.Run(when, func(t *testing.T) {
			checkNoLeak(t)
			sc := agonestest.Start(t, agonestest.Config{})
			// A long request timeout: only the Lifecycle's contexts end a
			// hanging call.
			sdk := newSDK(t, sc, Config{RequestTimeout: time.Minute})
			l, err := NewLifecycle(sdk, newFakeServer(4, 1), testLifecycleConfig(TrackPlayers))
			if err != nil {
				t.Fatal(err)
			}
			if when == "before Ready" {
				sc.Hang()
			}
			if err := l.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if when == "after Ready" {
				waitReady(t, l)
				sc.Hang()
				n := sc.Count("POST", "/health")
				waitFor(t, "a hanging Health", func() bool { return sc.Count("POST", "/health") > n })
			} else {
				waitFor(t, "a hanging Ready", func() bool { return sc.Count("POST", "/ready") > 0 })
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			within(t, deadline, "Shutdown", func() { err = l.Shutdown(ctx) })
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Shutdown: %v; want the deadline", err)
			}
			within(t, deadline, "Close", func() { l.Close() })
			noLifecycleGoroutines(t, "Close")
			if st := l.Stats(); st.Shutdown || st.Failures != 0 {
				t.Errorf("stats %+v; want no Shutdown and no failures blamed on the sidecar for calls we cut short", st)
			}
			sc.CheckClean(t)
		})
	}
}

// TestLifecycleCloseDuringShutdown: Close ends a Shutdown still retrying.
func TestLifecycleCloseDuringShutdown(t *testing.T) {
	checkNoLeak(t)
	sc := agonestest.Start(t, agonestest.Config{})
	sc.Fail(500)
	l, err := NewLifecycle(newSDK(t, sc, Config{}), newFakeServer(1), testLifecycleConfig(TrackNone))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Shutdown(context.Background()) }()
	waitFor(t, "Shutdown retries", func() bool { return sc.Count("POST", "/shutdown") >= 3 })
	within(t, deadline, "Close", func() { l.Close() })
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown: %v; want it cancelled", err)
		}
	case <-time.After(deadline):
		t.Fatal("Shutdown still running after Close")
	}
}

// TestLifecycleWaitsForLive: Ready is not sent while the server is not
// live.
func TestLifecycleWaitsForLive(t *testing.T) {
	checkNoLeak(t)
	sc := agonestest.Start(t, agonestest.Config{})
	srv := newFakeServer(1)
	srv.setLive(false)
	l, err := NewLifecycle(newSDK(t, sc, Config{}), srv, testLifecycleConfig(TrackNone))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Start(context.Background())
	time.Sleep(20 * tick)
	if n := len(sc.Calls()); n != 0 {
		t.Fatalf("%d requests while not live", n)
	}
	srv.setLive(true)
	waitReady(t, l)
}

// TestLifecycleStartContext: cancelling Start's context stops the
// goroutines without Close.
func TestLifecycleStartContext(t *testing.T) {
	checkNoLeak(t)
	sc := agonestest.Start(t, agonestest.Config{})
	l, err := NewLifecycle(newSDK(t, sc, Config{}), newFakeServer(1), testLifecycleConfig(TrackNone))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.Start(ctx)
	waitReady(t, l)
	cancel()
	waitFor(t, "the goroutines to stop", func() bool { return lifecycleGoroutines() == 0 })
	l.Close()
}

func TestLifecycleMisuse(t *testing.T) {
	sc := agonestest.Start(t, agonestest.Config{})
	sdk := newSDK(t, sc, Config{})
	ctx := context.Background()
	newL := func() *Lifecycle {
		l, err := NewLifecycle(sdk, newFakeServer(1), testLifecycleConfig(TrackNone))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := newL()
	if err := l.Close(); err != nil {
		t.Errorf("Close before Start: %v", err)
	}
	if err := l.Start(ctx); err == nil || !strings.Contains(err.Error(), "after Close") {
		t.Errorf("Start after Close: %v", err)
	}
	l = newL()
	l.Start(ctx)
	if err := l.Start(ctx); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("second Start: %v", err)
	}
	l.Close()
	l.Close()
	l = newL()
	if err := l.Shutdown(ctx); err != nil || sc.State() != StateShutdown {
		t.Errorf("Shutdown without Start: %v, state %q", err, sc.State())
	}
	if err := l.Start(ctx); err == nil || !strings.Contains(err.Error(), "after Shutdown") {
		t.Errorf("Start after Shutdown: %v", err)
	}
	if _, err := NewLifecycle(nil, newFakeServer(1), LifecycleConfig{}); err == nil {
		t.Error("NewLifecycle without an SDK")
	}
	if _, err := NewLifecycle(sdk, nil, LifecycleConfig{}); err == nil {
		t.Error("NewLifecycle without a Server")
	}
}

func TestLifecycleConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    LifecycleConfig
		errHas string
	}{
		{"defaults", LifecycleConfig{}, ""},
		{"health too short", LifecycleConfig{HealthInterval: time.Microsecond}, "HealthInterval"},
		{"health too long", LifecycleConfig{HealthInterval: time.Hour}, "HealthInterval"},
		{"sync negative", LifecycleConfig{SyncInterval: -1}, "SyncInterval"},
		{"tracking unknown", LifecycleConfig{Tracking: 9}, "Tracking(9)"},
		{"tracking name bad", LifecycleConfig{Tracking: TrackList, TrackingName: "a/b"}, "TrackingName"},
		{"changes too many", LifecycleConfig{MaxChangesPerSync: 1 << 20}, "MaxChangesPerSync"},
		{"label bad", LifecycleConfig{Labels: map[string]string{"a b": "c"}}, "label key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			err := cfg.check()
			if tc.errHas == "" {
				if err != nil || cfg.HealthInterval != DefaultHealthInterval || cfg.SyncInterval != DefaultSyncInterval || cfg.TrackingName != DefaultTrackingName || cfg.MaxChangesPerSync != DefaultMaxChangesPerSync {
					t.Errorf("%+v, %v; want the defaults", cfg, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("err %v; want one mentioning %q", err, tc.errHas)
			}
		})
	}
}

// TestLifecycleShutdownIsLast: Shutdown lets a call in flight finish before
// it sends Shutdown, so that the sidecar sees nothing after it.
func TestLifecycleShutdownIsLast(t *testing.T) {
	checkNoLeak(t)
	sc := agonestest.Start(t, agonestest.Config{})
	l, err := NewLifecycle(newSDK(t, sc, Config{RequestTimeout: time.Minute}), newFakeServer(1), testLifecycleConfig(TrackNone))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Start(context.Background())
	waitReady(t, l)
	sc.Hang()
	n := sc.Count("POST", "/health")
	waitFor(t, "a hanging Health", func() bool { return sc.Count("POST", "/health") > n })
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		done <- l.Shutdown(ctx)
	}()
	time.Sleep(10 * tick)
	if sc.Count("POST", "/shutdown") != 0 {
		t.Fatal("Shutdown sent while a Health was in flight")
	}
	sc.Release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(deadline):
		t.Fatal("Shutdown did not return after Release")
	}
	calls := sc.Calls()
	last, before := calls[len(calls)-1], calls[len(calls)-2]
	if last.Path != "/shutdown" || before.Path != "/health" || before.Status != 200 {
		t.Errorf("last calls %+v, %+v; want the Health answered, then Shutdown", before, last)
	}
}

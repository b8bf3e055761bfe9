package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/netcode-go/netcode/cmd/internal/cli"
	"github.com/netcode-go/netcode/engine/backend"
)

// TestMetricsLint scrapes a live token service's /metrics and lints it as
// promtool check metrics does (client_golang's promlint).
func TestMetricsLint(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut lockedBuffer
	e := &env{ctx: ctx, getenv: func(k string) string { return keyVars[k] }, stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, now: time.Now}
	exit := make(chan int, 1)
	go func() {
		exit <- run(e, []string{"serve", "-listen", "127.0.0.1:0", "-protocol", "1", "-auth", "dev", "-servers", "192.0.2.1:40000"})
	}()
	addr := waitListening(t, &errOut, exit)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	for _, series := range []string{"netcode_token_issued_total 0", `netcode_token_refused_total{code="rate_limited"} 0`} {
		if !bytes.Contains(body, []byte(series)) {
			t.Errorf("no %q in the scrape", series)
		}
	}
	if resp, err := http.Get("http://" + addr + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /readyz with static servers: %v %v; want 200", resp, err)
	} else {
		resp.Body.Close()
	}
	b := cli.Build()
	want := `netcode_build_info{goversion="` + b.GoVersion + `",revision="` + b.Revision + `",version="` + b.Version + `"} 1` + "\n"
	if !bytes.Contains(body, []byte(want)) {
		t.Errorf("no %q in the scrape:\n%s", want, body)
	}
	cancel()
	if code := <-exit; code != 0 {
		t.Errorf("exit %d", code)
	}
}

// The service is ready while its health directory has a server that
// answered ready, or has probed none yet; static directories always are.
func TestReady(t *testing.T) {
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	}))
	defer srv.Close()
	dir, err := backend.NewHealthDirectory(backend.HealthConfig{CacheFor: -1,
		Targets: []backend.HealthTarget{{URL: srv.URL, Server: backend.Server{Public: netip.MustParseAddrPort("192.0.2.1:40000")}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !ready(dir) {
		t.Error("not ready before the first probe")
	}
	dir.Servers(context.Background(), nil)
	if !ready(dir) {
		t.Error("not ready with its server up")
	}
	down.Store(true)
	dir.Servers(context.Background(), nil)
	if ready(dir) {
		t.Error("ready with its only server down")
	}
	if !ready(&backend.StaticDirectory{}) {
		t.Error("a static directory is not ready")
	}
}

package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/netcode-go/netcode/cmd/internal/cli"
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

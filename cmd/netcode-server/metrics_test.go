package main

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/netcode-go/netcode/cmd/internal/cli"
)

// scrape GETs a /metrics body.
func scrape(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return body
}

// TestMetricsLint scrapes a live server's /metrics and lints it as
// promtool check metrics does (client_golang's promlint): no problems,
// and netcode_build_info names this build with value 1.
func TestMetricsLint(t *testing.T) {
	_, fields, stop := serve(t, []string{"-bind", "127.0.0.1:0", "-shards", "2"}, nil)
	body := scrape(t, "http://"+fields["http"].(string)+"/metrics")
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	// The linter is live: a counter without _total is a problem.
	if bad, _ := promlint.New(bytes.NewReader([]byte("# HELP x_count x\n# TYPE x_count counter\nx_count 1\n"))).Lint(); len(bad) == 0 {
		t.Error("promlint found no problem in a counter without _total")
	}
	b := cli.Build()
	want := `netcode_build_info{goversion="` + regexp.QuoteMeta(b.GoVersion) + `",revision="` + regexp.QuoteMeta(b.Revision) +
		`",version="` + regexp.QuoteMeta(b.Version) + `"} 1` + "\n"
	if !regexp.MustCompile(want).Match(body) {
		t.Errorf("no %q in the scrape", want)
	}
	for _, name := range []string{"netcode_connected_clients", "netcode_live", "go_goroutines", "process_open_fds"} {
		if !bytes.Contains(body, []byte("\n"+name)) {
			t.Errorf("no %s in the scrape", name)
		}
	}
	if code := stop(); code != 0 {
		t.Errorf("exit %d", code)
	}
}

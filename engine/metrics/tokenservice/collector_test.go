package tokenservice_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/netcode-go/netcode/engine/backend"
	"github.com/netcode-go/netcode/engine/metrics/tokenservice"
)

// The collector's series pass the linter and say what the handler and the
// health directory know: tokens issued, refusals by code, and each
// server's state.
func TestCollector(t *testing.T) {
	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.Write([]byte("ready\nconnected_clients 3\nmax_clients 10\n"))
			return
		}
		http.NotFound(w, r)
	}))
	defer ready.Close()
	public := netip.MustParseAddrPort("192.0.2.1:40000")
	dir, err := backend.NewHealthDirectory(backend.HealthConfig{Targets: []backend.HealthTarget{{URL: ready.URL, Server: backend.Server{Public: public}}}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := backend.NewHandler(backend.Config{ProtocolID: 1, PrivateKey: make([]byte, 32), Directory: dir,
		Authenticate: func(*http.Request) (uint64, []byte, error) { return 7, nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if w := httptest.NewRecorder(); true {
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/token", nil))
		if w.Code != http.StatusOK {
			t.Fatalf("token request: %d %s", w.Code, w.Body)
		}
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/token", nil))
	if _, err := dir.Servers(context.Background(), nil); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(tokenservice.NewCollector(h, dir))
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	want := `
# HELP netcode_token_directory_server_free_slots The server's free slots at the last probe; -1 when its load is unknown.
# TYPE netcode_token_directory_server_free_slots gauge
netcode_token_directory_server_free_slots{server="192.0.2.1:40000"} 7
# HELP netcode_token_directory_server_up 1 if the server answered ready at the health directory's last probe.
# TYPE netcode_token_directory_server_up gauge
netcode_token_directory_server_up{server="192.0.2.1:40000"} 1
# HELP netcode_token_issued_total Connect tokens issued.
# TYPE netcode_token_issued_total counter
netcode_token_issued_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "netcode_token_issued_total",
		"netcode_token_directory_server_up", "netcode_token_directory_server_free_slots"); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(refused(t, reg, "method_not_allowed")); got != 1 {
		t.Errorf("method_not_allowed refusals %v; want 1", got)
	}
}

// refused returns the netcode_token_refused_total series of code.
func refused(t *testing.T, reg *prometheus.Registry, code string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "netcode_token_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == code {
				return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"}, func() float64 { return m.GetCounter().GetValue() })
			}
		}
	}
	t.Fatalf("no refusals series for %q", code)
	return nil
}

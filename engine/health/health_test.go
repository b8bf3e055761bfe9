package health_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/health"
)

// fake answers as told.
type fake struct{ live, ready, draining bool }

func (f *fake) Live(time.Duration) bool { return f.live }
func (f *fake) Ready() bool             { return f.ready }
func (f *fake) Draining() bool          { return f.draining }

func serve(t *testing.T, h http.Handler, method string) (int, string, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, "/probe", nil))
	return rec.Code, rec.Body.String(), rec.Header()
}

func TestHandlers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		state  fake
		h      func(*fake) http.Handler
		method string
		code   int
		body   string
	}{
		{"live", fake{live: true}, liveness, "GET", 200, health.BodyLive},
		{"stalled", fake{live: false, ready: true}, liveness, "GET", 503, health.BodyStalled},
		{"live head", fake{live: true}, liveness, "HEAD", 200, ""},
		{"ready", fake{ready: true, live: true}, readiness, "GET", 200, health.BodyReady},
		{"draining", fake{draining: true, live: true}, readiness, "GET", 503, health.BodyDraining},
		{"stopped", fake{}, readiness, "GET", 503, health.BodyNotRunning},
		{"stopped head", fake{}, readiness, "HEAD", 503, ""},
		{"post", fake{ready: true}, readiness, "POST", 405, "method not allowed; use GET or HEAD\n"},
		{"delete", fake{live: true}, liveness, "DELETE", 405, "method not allowed; use GET or HEAD\n"},
		{"game live", fake{live: true}, livenessAnd(true), "GET", 200, health.BodyLive},
		{"game hung", fake{live: true}, livenessAnd(false), "GET", 503, health.BodyHung},
		{"game live, shard stalled", fake{}, livenessAnd(true), "GET", 503, health.BodyStalled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, hdr := serve(t, tc.h(&tc.state), tc.method)
			if code != tc.code || body != tc.body {
				t.Fatalf("%s: %d %q; want %d %q", tc.method, code, body, tc.code, tc.body)
			}
			if code == 405 {
				if hdr.Get("Allow") != "GET, HEAD" {
					t.Fatalf("405 without Allow: %v", hdr)
				}
				return
			}
			if hdr.Get("Cache-Control") != "no-store" || hdr.Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Fatalf("headers %v", hdr)
			}
		})
	}
}

func liveness(f *fake) http.Handler  { return health.Liveness(f, time.Second) }
func readiness(f *fake) http.Handler { return health.Readiness(f) }

func livenessAnd(game bool) func(*fake) http.Handler {
	return func(f *fake) http.Handler { return health.LivenessAnd(f, time.Second, func() bool { return game }) }
}

// stallProbe records the stall Liveness asks about.
type stallProbe struct{ got time.Duration }

func (s *stallProbe) Live(d time.Duration) bool { s.got = d; return true }

// TestLivenessStall: the bound reaches the server; nonsense bounds fall
// back to DefaultStall.
func TestLivenessStall(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{500 * time.Millisecond, 500 * time.Millisecond},
		{0, health.DefaultStall},
		{-time.Second, health.DefaultStall},
		{2 * time.Hour, health.DefaultStall},
	} {
		p := &stallProbe{}
		serve(t, health.Liveness(p, tc.in), "GET")
		if p.got != tc.want {
			t.Errorf("stall %v: server asked about %v; want %v", tc.in, p.got, tc.want)
		}
	}
}

// TestServerLifecycle follows a real manual-mode server through its
// states: live and ready, draining, stalled, closed.
func TestServerLifecycle(t *testing.T) {
	nw, err := batchiotest.NewMemNetwork(batchiotest.MemConfig{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := nw.Listen(netip.MustParseAddrPort("10.0.0.1:40000"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	srv, err := engine.NewServer(engine.ServerConfig{ProtocolID: 1, PrivateKey: make([]byte, 32), Manual: true}, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	live, ready := health.Liveness(srv, time.Hour), health.Readiness(srv)
	check := func(stage string, liveCode, readyCode int, readyBody string) {
		t.Helper()
		if code, body, _ := serve(t, live, "GET"); code != liveCode {
			t.Errorf("%s: liveness %d %q; want %d", stage, code, body, liveCode)
		}
		if code, body, _ := serve(t, ready, "GET"); code != readyCode || body != readyBody {
			t.Errorf("%s: readiness %d %q; want %d %q", stage, code, body, readyCode, readyBody)
		}
	}
	if err := srv.Update(time.Now()); err != nil {
		t.Fatal(err)
	}
	const load = "connected_clients 0\nmax_clients 256\n"
	check("running", 200, 200, health.BodyReady+load)
	srv.Drain()
	check("draining", 200, 503, health.BodyDraining+load)
	// A manual server whose loop stops calling Update stalls.
	stalled := health.Liveness(srv, 20*time.Millisecond)
	time.Sleep(40 * time.Millisecond)
	if code, _, _ := serve(t, stalled, "GET"); code != 503 {
		t.Errorf("no Update for 40 ms, stall bound 20 ms: liveness %d; want 503", code)
	}
	srv.Close()
	check("closed", 503, 503, health.BodyDraining+load)
}

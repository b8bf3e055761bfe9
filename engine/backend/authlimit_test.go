package backend

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// failingHandler refuses every caller whose X-Test-Client is "bad" and
// counts the Authenticate calls.
func failingHandler(t *testing.T, cfg Config) (*Handler, *atomic.Int64) {
	calls := new(atomic.Int64)
	cfg.Authenticate = func(r *http.Request) (uint64, []byte, error) {
		calls.Add(1)
		if r.Header.Get("X-Test-Client") == "bad" {
			return 0, nil, &AuthError{Status: http.StatusUnauthorized, Message: "wrong secret"}
		}
		return idAuth(r)
	}
	return mustHandler(t, cfg), calls
}

func postFrom(h http.Handler, remote, client string) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/token", nil)
	r.RemoteAddr = remote
	r.Header.Set("X-Test-Client", client)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestAuthFailuresLimited: an address that keeps failing to authenticate
// is answered 429 without Authenticate being called, until its allowance
// refills; other addresses are not affected.
func TestAuthFailuresLimited(t *testing.T) {
	cfg, clock, _ := testConfig(t)
	h, calls := failingHandler(t, cfg)
	const a, b = "198.51.100.7:1000", "198.51.100.8:1000"
	for i := range DefaultAuthFailureBurst {
		if w := postFrom(h, a, "bad"); w.Code != http.StatusUnauthorized {
			t.Fatalf("refusal %d: status %d", i, w.Code)
		}
	}
	before := calls.Load()
	for range 100 {
		w := postFrom(h, a, "bad")
		if w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "too_many_failures") || w.Header().Get("Retry-After") != "10" {
			t.Fatalf("over the limit: status %d, Retry-After %q, body %s", w.Code, w.Header().Get("Retry-After"), w.Body)
		}
	}
	// A right secret from the blocked address waits too; the guesser
	// cannot tell.
	if w := postFrom(h, "198.51.100.7:2000", "42"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("blocked address, good secret: status %d", w.Code)
	}
	if calls.Load() != before {
		t.Fatalf("Authenticate ran %d times for a blocked address", calls.Load()-before)
	}
	if w := postFrom(h, b, "bad"); w.Code != http.StatusUnauthorized {
		t.Fatalf("another address: status %d", w.Code)
	}
	if w := postFrom(h, b, "42"); w.Code != http.StatusOK {
		t.Fatalf("another address, good secret: status %d", w.Code)
	}
	// One refusal back every 10 s.
	clock.Advance(10 * time.Second)
	if w := postFrom(h, a, "bad"); w.Code != http.StatusUnauthorized {
		t.Fatalf("after 10 s: status %d", w.Code)
	}
	if w := postFrom(h, a, "bad"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("after 10 s, twice: status %d", w.Code)
	}
	// IPv6 callers share a /64.
	for i := range DefaultAuthFailureBurst {
		postFrom(h, fmt.Sprintf("[2001:db8:1:2::%x]:1000", i+1), "bad")
	}
	if w := postFrom(h, "[2001:db8:1:2::ffff]:1000", "42"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("the same /64: status %d", w.Code)
	}
}

// TestAuthFailuresLogged: one address's refusals are logged once per
// LogInterval, the next line counting those not logged.
func TestAuthFailuresLogged(t *testing.T) {
	cfg, clock, logs := testConfig(t)
	h, _ := failingHandler(t, cfg)
	for range 1000 {
		postFrom(h, "198.51.100.7:1000", "bad")
	}
	postFrom(h, "198.51.100.9:1000", "bad")
	if n := strings.Count(logs.String(), `"msg":"request refused"`); n != 2 {
		t.Fatalf("%d lines for 1,001 refusals from two addresses in one interval, want 2:\n%s", n, logs)
	}
	clock.Advance(DefaultAuthLogInterval)
	postFrom(h, "198.51.100.7:1000", "bad")
	if !strings.Contains(logs.String(), `"unlogged_since_last":999`) {
		t.Fatalf("the next interval's line does not count the 999 unlogged:\n%s", logs)
	}
}

// TestForwardingHeaders: development auth refuses any header that a proxy
// may have added, known or not, and takes ordinary ones; a direct listener
// ignores them.
func TestForwardingHeaders(t *testing.T) {
	forwarding := []string{
		"Forwarded", "Via", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto",
		"X-Original-Forwarded-For", "X-Real-IP", "True-Client-IP", "X-Client-IP",
		"CF-Connecting-IP", "CF-Connecting-IPv6", "Fastly-Client-IP", "X-Cluster-Client-Ip",
		"X-Azure-ClientIP", "X-Envoy-External-Address", "X-ProxyUser-Ip", "Proxy-Client-IP",
		"WL-Proxy-Client-IP", "X-Appengine-User-IP", "X_Forwarded_For", "Remote-Addr",
	}
	ordinary := []string{"Content-Type", "Authorization", "User-Agent", "Accept", "X-Request-Id",
		"Sec-Fetch-Mode", "Cookie", "X-Game-Version", "Accept-Encoding", "Tip"}
	req := func(header string) *http.Request {
		r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/token?client_id=7", nil)
		r.RemoteAddr = "127.0.0.1:5000"
		if header != "" {
			r.Header[header] = []string{"203.0.113.9"} // as sent, not canonicalized
		}
		return r
	}
	for _, name := range forwarding {
		if !ForwardingHeader(name) {
			t.Errorf("%s: not taken for a forwarding header", name)
		}
		_, _, err := LoopbackOnly(req(name))
		if ae, ok := err.(*AuthError); !ok || ae.Status != http.StatusForbidden || !strings.Contains(ae.Message, name) {
			t.Errorf("LoopbackOnly with %s: %v", name, err)
		}
		if id, _, err := LoopbackOnlyDirect(req(name)); err != nil || id != 7 {
			t.Errorf("LoopbackOnlyDirect with %s: %d, %v", name, id, err)
		}
	}
	for _, name := range append(ordinary, "") {
		if name != "" && ForwardingHeader(name) {
			t.Errorf("%s: taken for a forwarding header", name)
		}
		if id, _, err := LoopbackOnly(req(name)); err != nil || id != 7 {
			t.Errorf("LoopbackOnly with %q: %d, %v", name, id, err)
		}
	}
}

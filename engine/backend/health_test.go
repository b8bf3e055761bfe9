package backend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeGameServer serves /readyz and /metrics like a netcode server.
type fakeGameServer struct {
	*httptest.Server
	ready     atomic.Bool
	metrics   atomic.Pointer[string]
	readyLoad atomic.Pointer[string] // when set, /readyz's body after "ready"
	readyHits atomic.Int32
	scrapes   atomic.Int32  // /metrics requests
	block     chan struct{} // when set, /readyz waits for it or the caller to go
}

func newFakeGameServer(t *testing.T, ready bool, metrics string) *fakeGameServer {
	f := &fakeGameServer{}
	f.ready.Store(ready)
	f.metrics.Store(&metrics)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		f.readyHits.Add(1)
		if f.block != nil {
			select {
			case <-f.block:
			case <-r.Context().Done():
			}
			return
		}
		if !f.ready.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		if l := f.readyLoad.Load(); l != nil {
			fmt.Fprint(w, "ready\n"+*l)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		f.scrapes.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		m := f.metrics.Load()
		if m == nil { // every scrape slot taken
			http.Error(w, "too many scrapes", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, *m)
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func load(connected []int, max int) string {
	var b strings.Builder
	b.WriteString("# TYPE netcode_connected_clients gauge\n")
	for i, c := range connected {
		fmt.Fprintf(&b, "netcode_connected_clients{shard=\"%d\"} %d\n", i, c)
	}
	fmt.Fprintf(&b, "# TYPE netcode_max_clients gauge\nnetcode_max_clients %d\n", max)
	return b.String()
}

func target(url string, i int) HealthTarget {
	return HealthTarget{URL: url, Server: Server{Public: netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 40000)}}
}

// Ready servers with free slots, most free first (the draw of the first
// fixed to the most free); draining, full and dead ones skipped; one whose
// load cannot be read is ready with unknown load, last.
func TestHealthDirectoryChooses(t *testing.T) {
	a := newFakeGameServer(t, true, load([]int{10}, 64))          // 54 free
	b := newFakeGameServer(t, true, load([]int{0, 1}, 100))       // 99 free, two shards
	draining := newFakeGameServer(t, false, load([]int{0}, 1000)) // most free, but draining
	full := newFakeGameServer(t, true, load([]int{30, 34}, 64))
	dead := newFakeGameServer(t, true, load([]int{0}, 64))
	dead.Close()
	garbage := newFakeGameServer(t, true, "netcode_connected_clients lots\n")
	g := newFakeGameServer(t, true, load([]int{5, 5}, 64)) // 54 free, after a

	d, err := NewHealthDirectory(HealthConfig{Targets: []HealthTarget{
		target(a.URL, 1), target(b.URL, 2), target(draining.URL, 3), target(full.URL, 4),
		target(dead.URL, 5), target(garbage.URL+"/", 6), target(g.URL, 7),
	}})
	if err != nil {
		t.Fatal(err)
	}
	d.randN = func(int64) int64 { return 0 }
	got, err := d.Servers(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"192.0.2.2:40000", "192.0.2.1:40000", "192.0.2.7:40000", "192.0.2.6:40000"}
	if names := serverNames(got); !slices.Equal(names, want) {
		t.Errorf("servers %v; want %v (most free first, unknown load last; draining, full, dead skipped)", names, want)
	}
}

func serverNames(s []Server) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.Public.String())
	}
	return out
}

// Rounds are cached for CacheFor, and callers arriving together share one.
func TestHealthDirectoryCache(t *testing.T) {
	srv := newFakeGameServer(t, true, load([]int{1}, 64))
	clock := newFakeClock()
	d, err := NewHealthDirectory(HealthConfig{Targets: []HealthTarget{target(srv.URL, 1)}, CacheFor: 2 * time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got, err := d.Servers(context.Background(), nil); err != nil || len(got) != 1 {
				t.Errorf("got %v, %v", got, err)
			}
		})
	}
	wg.Wait()
	if n := srv.readyHits.Load(); n != 1 {
		t.Errorf("8 callers probed %d times; want 1", n)
	}
	srv.ready.Store(false)
	clock.Advance(time.Second)
	if got, _ := d.Servers(context.Background(), nil); len(got) != 1 || srv.readyHits.Load() != 1 {
		t.Errorf("within CacheFor: %v, %d probes; want the cached server and no probe", got, srv.readyHits.Load())
	}
	clock.Advance(time.Second)
	got, err := d.Servers(context.Background(), nil)
	if len(got) != 0 || !errors.Is(err, ErrNoServers) || srv.readyHits.Load() != 2 {
		t.Errorf("after CacheFor, server draining: %v, %v, %d probes; want none, ErrNoServers, 2 probes", got, err, srv.readyHits.Load())
	}

	nocache, err := NewHealthDirectory(HealthConfig{Targets: []HealthTarget{target(srv.URL, 1)}, CacheFor: -1, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		nocache.Servers(context.Background(), nil)
	}
	if n := srv.readyHits.Load(); n != 5 {
		t.Errorf("no cache: %d probes after 3 more calls; want 5", n)
	}
}

// A server that does not answer within Timeout is skipped; the others are
// not held up past it.
func TestHealthDirectoryTimeout(t *testing.T) {
	slow := newFakeGameServer(t, true, load([]int{0}, 100))
	slow.block = make(chan struct{})
	t.Cleanup(func() { close(slow.block) }) // runs before the server's Close
	fast := newFakeGameServer(t, true, load([]int{0}, 10))
	d, err := NewHealthDirectory(HealthConfig{Targets: []HealthTarget{target(slow.URL, 1), target(fast.URL, 2)}, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Servers(context.Background(), nil)
	if err != nil || !slices.Equal(serverNames(got), []string{"192.0.2.2:40000"}) {
		t.Errorf("got %v, %v; want only the server that answered", serverNames(got), err)
	}
}

// A caller waiting for another's round gives up with its own context.
func TestHealthDirectoryWaiterContext(t *testing.T) {
	slow := newFakeGameServer(t, true, load([]int{0}, 100))
	slow.block = make(chan struct{})
	t.Cleanup(func() { close(slow.block) })
	d, err := NewHealthDirectory(HealthConfig{Targets: []HealthTarget{target(slow.URL, 1)}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan []Server, 1)
	go func() { got, _ := d.Servers(context.Background(), nil); first <- got }()
	for slow.readyHits.Load() == 0 { // the first caller's round is under way
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Servers(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("waiter with a cancelled context: %v; want context.Canceled", err)
	}
	slow.block <- struct{}{} // readyz answers 200 now
	if got := <-first; len(got) != 1 {
		t.Errorf("first caller: %v; want the server once its round ended", got)
	}
}

func TestNewHealthDirectoryErrors(t *testing.T) {
	ok := target("http://127.0.0.1:9090", 1)
	tests := []struct {
		name string
		cfg  HealthConfig
		want string
	}{
		{"no targets", HealthConfig{}, "0 targets; allowed 1 to 4096"},
		{"too many", HealthConfig{Targets: make([]HealthTarget, 4097)}, "4097 targets"},
		{"bad scheme", HealthConfig{Targets: []HealthTarget{target("ftp://x", 1)}}, `target 0: URL "ftp://x"; want http://`},
		{"no host", HealthConfig{Targets: []HealthTarget{target("http://", 1)}}, "URL"},
		{"query", HealthConfig{Targets: []HealthTarget{target("http://x/?a=b", 1)}}, "no query"},
		{"bad server", HealthConfig{Targets: []HealthTarget{{URL: "http://x", Server: Server{Public: netip.MustParseAddrPort("0.0.0.0:1")}}}}, "target 0: public address"},
		{"port 0", HealthConfig{Targets: []HealthTarget{{URL: "http://x", Server: Server{Public: netip.MustParseAddrPort("192.0.2.1:0")}}}}, "port from 1 to 65535"},
		{"timeout", HealthConfig{Targets: []HealthTarget{ok}, Timeout: time.Minute}, "Timeout 1m0s; allowed up to 30s"},
		{"cache", HealthConfig{Targets: []HealthTarget{ok}, CacheFor: time.Hour}, "CacheFor 1h0m0s"},
		{"concurrency", HealthConfig{Targets: []HealthTarget{ok}, Concurrency: 257}, "Concurrency 257; allowed 1 to 256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewHealthDirectory(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one saying %q", err, tt.want)
			}
		})
	}
}

// Through the handler: the draining server is not in the token.
func TestHandlerSkipsDrainingServer(t *testing.T) {
	ready := newFakeGameServer(t, true, load([]int{3}, 16))
	draining := newFakeGameServer(t, false, load([]int{0}, 16))
	clock := newFakeClock()
	d, err := NewHealthDirectory(HealthConfig{Targets: []HealthTarget{target(draining.URL, 1), target(ready.URL, 2)}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, _ := testConfig(t)
	cfg.Directory = d
	h := mustHandler(t, cfg)
	resp := decodeTokenResponse(t, post(h, "1", ""))
	ct, _ := openToken(t, resp.ConnectToken)
	if got := fmt.Sprint(ct.Addresses()); got != "[192.0.2.2:40000]" || !slices.Equal(resp.Servers, []string{"192.0.2.2:40000"}) {
		t.Errorf("token lists %s (response %v); want only the ready server", got, resp.Servers)
	}

	ready.ready.Store(false)
	clock.Advance(DefaultHealthCacheFor)
	if w := post(h, "2", ""); w.Code != http.StatusServiceUnavailable {
		t.Errorf("every server draining: status %d; want 503", w.Code)
	}
}

// A round that takes longer than CacheFor still ends the call that ran it:
// it returns that round's result instead of probing again.
func TestHealthDirectorySlowRound(t *testing.T) {
	srv := newFakeGameServer(t, true, load([]int{1}, 8))
	var ticks atomic.Int64
	now := func() time.Time { return testStart.Add(time.Duration(ticks.Add(1)) * time.Hour) } // every reading an hour later
	d, err := NewHealthDirectory(HealthConfig{Targets: []HealthTarget{target(srv.URL, 1)}, CacheFor: time.Nanosecond, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []Server, 1)
	go func() { got, _ := d.Servers(context.Background(), nil); done <- got }()
	select {
	case got := <-done:
		if len(got) != 1 || srv.readyHits.Load() != 1 {
			t.Errorf("got %v after %d probes; want the server after 1", got, srv.readyHits.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Servers still probing after %d rounds", srv.readyHits.Load())
	}
}

package agones

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine/agones/agonestest"
)

func TestNewSDKConfig(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		cfg       Config
		base      string // want, or "" for an error
		errHas    string
	}{
		{name: "default", base: "http://localhost:9358"},
		{name: "env port", env: "9400", base: "http://localhost:9400"},
		{name: "env not a port", env: "http", errHas: "AGONES_SDK_HTTP_PORT"},
		{name: "env port 0", env: "0", errHas: "1 to 65535"},
		{name: "env port too big", env: "70000", errHas: "1 to 65535"},
		{name: "address", cfg: Config{Address: "127.0.0.1:1234"}, base: "http://127.0.0.1:1234"},
		{name: "address with scheme", cfg: Config{Address: "http://[::1]:1234"}, base: "http://[::1]:1234"},
		{name: "address overrides env", env: "http", cfg: Config{Address: "localhost:1"}, base: "http://localhost:1"},
		{name: "address without port", cfg: Config{Address: "localhost"}, errHas: "want host:port"},
		{name: "address with path", cfg: Config{Address: "localhost:1/x"}, errHas: "want host:port"},
		{name: "address with bad port", cfg: Config{Address: "localhost:0"}, errHas: "1 to 65535"},
		{name: "timeout too small", cfg: Config{RequestTimeout: time.Microsecond}, errHas: "RequestTimeout"},
		{name: "timeout too big", cfg: Config{RequestTimeout: time.Hour}, errHas: "RequestTimeout"},
		{name: "backoff initial", cfg: Config{Retry: Backoff{Initial: time.Microsecond}}, errHas: "Backoff.Initial"},
		{name: "backoff max below initial", cfg: Config{Retry: Backoff{Initial: time.Second, Max: time.Millisecond}}, errHas: "Backoff.Max"},
		{name: "backoff attempts", cfg: Config{Retry: Backoff{MaxAttempts: -1}}, errHas: "Backoff.MaxAttempts"},
		{name: "backoff attempts too many", cfg: Config{Retry: Backoff{MaxAttempts: 1000}}, errHas: "Backoff.MaxAttempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvHTTPPort, tc.env)
			s, err := NewSDK(tc.cfg)
			if tc.base == "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v; want one mentioning %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.base != tc.base {
				t.Errorf("base %q; want %q", s.base, tc.base)
			}
			if tc.cfg.RequestTimeout == 0 && s.timeout != DefaultRequestTimeout {
				t.Errorf("timeout %v; want %v", s.timeout, DefaultRequestTimeout)
			}
			if tc.cfg.Retry == (Backoff{}) && s.retry != (Backoff{DefaultBackoffInitial, DefaultBackoffMax, DefaultBackoffMaxAttempts}) {
				t.Errorf("retry %+v; want the defaults", s.retry)
			}
		})
	}
}

// TestSDKCalls checks that each call sends the documented method, path and
// body, and reads the documented answer.
func TestSDKCalls(t *testing.T) {
	checkNoLeak(t)
	sc := agonestest.Start(t, agonestest.Config{
		Counters:       map[string]agonestest.Counter{"rooms": {Count: 1, Capacity: 10}},
		Lists:          map[string]agonestest.List{"players": {Capacity: 10, Values: []string{"p0"}}},
		PlayerCapacity: 4,
	})
	s := newSDK(t, sc, Config{})
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		do     func() (any, error)
		method string
		path   string
		body   string // "" for none
		want   any    // the call's result, if any
	}{
		{"Ready", func() (any, error) { return nil, s.Ready(ctx) }, "POST", "/ready", `{}`, nil},
		{"Health", func() (any, error) { return nil, s.Health(ctx) }, "POST", "/health", `{}`, nil},
		{"Allocate", func() (any, error) { return nil, s.Allocate(ctx) }, "POST", "/allocate", `{}`, nil},
		{"Reserve", func() (any, error) { return nil, s.Reserve(ctx, 1500*time.Millisecond) }, "POST", "/reserve", `{"seconds":"2"}`, nil},
		{"Reserve forever", func() (any, error) { return nil, s.Reserve(ctx, 0) }, "POST", "/reserve", `{"seconds":"0"}`, nil},
		{"SetLabel", func() (any, error) { return nil, s.SetLabel(ctx, "shard", "a-1") }, "PUT", "/metadata/label", `{"key":"shard","value":"a-1"}`, nil},
		{"SetAnnotation", func() (any, error) { return nil, s.SetAnnotation(ctx, "build", "v1 (test)") }, "PUT", "/metadata/annotation", `{"key":"build","value":"v1 (test)"}`, nil},
		{"GetCounter", func() (any, error) { return s.GetCounter(ctx, "rooms") }, "GET", "/v1beta1/counters/rooms", "", Counter{"rooms", 1, 10}},
		{"SetCounterCount", func() (any, error) { return s.SetCounterCount(ctx, "rooms", 5) }, "PATCH", "/v1beta1/counters/rooms", `{"count":"5"}`, Counter{"rooms", 5, 10}},
		{"SetCounterCapacity", func() (any, error) { return s.SetCounterCapacity(ctx, "rooms", 11) }, "PATCH", "/v1beta1/counters/rooms", `{"capacity":"11"}`, Counter{"rooms", 5, 11}},
		{"IncrementCounter", func() (any, error) { return s.IncrementCounter(ctx, "rooms", 2) }, "PATCH", "/v1beta1/counters/rooms", `{"countDiff":"2"}`, Counter{"rooms", 7, 11}},
		{"DecrementCounter", func() (any, error) { return s.DecrementCounter(ctx, "rooms", 3) }, "PATCH", "/v1beta1/counters/rooms", `{"countDiff":"-3"}`, Counter{"rooms", 4, 11}},
		{"UpdateCounter both", func() (any, error) {
			n, c := int64(3), int64(3)
			return s.UpdateCounter(ctx, "rooms", CounterUpdate{Count: &n, Capacity: &c})
		}, "PATCH", "/v1beta1/counters/rooms", `{"count":"3","capacity":"3"}`, Counter{"rooms", 3, 3}},
		{"GetList", func() (any, error) { return s.GetList(ctx, "players") }, "GET", "/v1beta1/lists/players", "", List{"players", 10, []string{"p0"}}},
		{"AddListValue", func() (any, error) { return s.AddListValue(ctx, "players", "p9") }, "POST", "/v1beta1/lists/players:addValue", `{"value":"p9"}`, List{"players", 10, []string{"p0", "p9"}}},
		{"RemoveListValue", func() (any, error) { return s.RemoveListValue(ctx, "players", "p0") }, "POST", "/v1beta1/lists/players:removeValue", `{"value":"p0"}`, List{"players", 10, []string{"p9"}}},
		{"SetListCapacity", func() (any, error) { return s.SetListCapacity(ctx, "players", 120) }, "PATCH", "/v1beta1/lists/players", `{"capacity":"120"}`, List{"players", 120, []string{"p9"}}},
		{"SetListValues", func() (any, error) { return s.SetListValues(ctx, "players", []string{"a", "b"}) }, "PATCH", "/v1beta1/lists/players", `{"values":["a","b"]}`, List{"players", 120, []string{"a", "b"}}},
		{"SetListValues empty", func() (any, error) { return s.SetListValues(ctx, "players", nil) }, "PATCH", "/v1beta1/lists/players", `{"values":[]}`, List{"players", 120, []string{}}},
		{"SetPlayerCapacity", func() (any, error) { return nil, s.SetPlayerCapacity(ctx, 5) }, "PUT", "/alpha/player/capacity", `{"count":"5"}`, nil},
		{"GetPlayerCapacity", func() (any, error) { return s.GetPlayerCapacity(ctx) }, "GET", "/alpha/player/capacity", "", int64(5)},
		{"PlayerConnect", func() (any, error) { return s.PlayerConnect(ctx, "uzh7i") }, "POST", "/alpha/player/connect", `{"playerID":"uzh7i"}`, true},
		{"PlayerConnect again", func() (any, error) { return s.PlayerConnect(ctx, "uzh7i") }, "POST", "/alpha/player/connect", `{"playerID":"uzh7i"}`, false},
		{"GetPlayerCount", func() (any, error) { return s.GetPlayerCount(ctx) }, "GET", "/alpha/player/count", "", int64(1)},
		{"IsPlayerConnected", func() (any, error) { return s.IsPlayerConnected(ctx, "uzh7i") }, "GET", "/alpha/player/connected/uzh7i", "", true},
		{"GetConnectedPlayers", func() (any, error) { return s.GetConnectedPlayers(ctx) }, "GET", "/alpha/player/connected", "", []string{"uzh7i"}},
		{"PlayerDisconnect", func() (any, error) { return s.PlayerDisconnect(ctx, "uzh7i") }, "POST", "/alpha/player/disconnect", `{"playerID":"uzh7i"}`, true},
		{"PlayerDisconnect again", func() (any, error) { return s.PlayerDisconnect(ctx, "uzh7i") }, "POST", "/alpha/player/disconnect", `{"playerID":"uzh7i"}`, false},
		{"IsPlayerConnected gone", func() (any, error) { return s.IsPlayerConnected(ctx, "uzh7i") }, "GET", "/alpha/player/connected/uzh7i", "", false},
		{"Shutdown", func() (any, error) { return nil, s.Shutdown(ctx) }, "POST", "/shutdown", `{}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(sc.Calls())
			got, err := tc.do()
			if err != nil {
				t.Fatal(err)
			}
			calls := sc.Calls()[n:]
			if len(calls) != 1 {
				t.Fatalf("%d requests; want 1: %+v", len(calls), calls)
			}
			c := calls[0]
			if c.Method != tc.method || c.Path != tc.path || c.Body != tc.body || c.Status != http.StatusOK {
				t.Errorf("sent %s %s %s (answered %d); want %s %s %s (200)", c.Method, c.Path, c.Body, c.Status, tc.method, tc.path, tc.body)
			}
			if tc.want != nil && !equal(got, tc.want) {
				t.Errorf("got %#v; want %#v", got, tc.want)
			}
		})
	}
	sc.CheckClean(t)
	if st := sc.State(); st != StateShutdown {
		t.Errorf("state %q; want Shutdown", st)
	}
	if got := sc.Labels()[MetadataPrefix+"shard"]; got != "a-1" {
		t.Errorf("label %q; want a-1", got)
	}
	if got := sc.Annotations()[MetadataPrefix+"build"]; got != "v1 (test)" {
		t.Errorf("annotation %q; want %q", got, "v1 (test)")
	}
	if got := sc.ReserveSeconds(); got != 0 {
		t.Errorf("reserve seconds %d; want 0 (the last Reserve)", got)
	}
	st := s.Stats()
	if st.Failures != 0 || st.Calls != st.Attempts || st.Calls == 0 {
		t.Errorf("stats %+v; want calls = attempts > 0 and no failures", st)
	}
}

func equal(a, b any) bool {
	switch x := a.(type) {
	case List:
		y := b.(List)
		return x.Name == y.Name && x.Capacity == y.Capacity && strings.Join(x.Values, "\x00") == strings.Join(y.Values, "\x00") && (x.Values == nil) == (y.Values == nil)
	case []string:
		return strings.Join(x, "\x00") == strings.Join(b.([]string), "\x00")
	}
	return a == b
}

func TestSDKGameServer(t *testing.T) {
	sc := agonestest.Start(t, agonestest.Config{
		Name:                "gs-1",
		Address:             "node.example.com",
		Addresses:           []agonestest.Address{{Type: "ExternalDNS", Address: "node.example.com"}, {Type: "InternalIP", Address: "10.0.0.5"}, {Type: "ExternalIP", Address: "203.0.113.9"}},
		Ports:               []agonestest.Port{{Name: "metrics", Port: 9000}, {Name: "game", Port: 7654}},
		HealthPeriodSeconds: 7,
		Labels:              map[string]string{"fleet": "f1"},
		Annotations:         map[string]string{"note": "x"},
		Counters:            map[string]agonestest.Counter{"rooms": {Count: 2, Capacity: 9}},
		Lists:               map[string]agonestest.List{"players": {Capacity: 3, Values: []string{"1"}}},
		PlayerCapacity:      8,
	})
	s := newSDK(t, sc, Config{})
	ctx := context.Background()
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PlayerConnect(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	gs, err := s.GameServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, st := gs.ObjectMeta, gs.Status
	switch {
	case m.Name != "gs-1", m.Namespace != "default", m.Labels["fleet"] != "f1", m.Annotations["note"] != "x", m.CreationTimestamp == 0:
		t.Errorf("meta %+v", m)
	case gs.Health.PeriodSeconds != 7 || gs.Health.FailureThreshold != 3:
		t.Errorf("health %+v", gs.Health)
	case st.State != StateReady || st.Address != "node.example.com" || len(st.Addresses) != 3 || st.Addresses[2] != (NodeAddress{AddressExternalIP, "203.0.113.9"}):
		t.Errorf("status %+v", st)
	case len(st.Ports) != 2 || st.Ports[1] != (Port{"game", 7654}):
		t.Errorf("ports %+v", st.Ports)
	case st.Counters["rooms"] != (Counter{"rooms", 2, 9}):
		t.Errorf("counters %+v", st.Counters)
	case st.Lists["players"].Capacity != 3 || len(st.Lists["players"].Values) != 1:
		t.Errorf("lists %+v", st.Lists)
	case st.Players == nil || st.Players.Count != 1 || st.Players.Capacity != 8 || len(st.Players.IDs) != 1:
		t.Errorf("players %+v", st.Players)
	}
	// The address is a DNS name, so the ExternalIP is picked.
	for name, want := range map[string]string{"": "203.0.113.9:9000", "game": "203.0.113.9:7654"} {
		ap, err := gs.PublicAddrPort(name)
		if err != nil || ap.String() != want {
			t.Errorf("PublicAddrPort(%q) = %v, %v; want %s", name, ap, err, want)
		}
	}
	sc.CheckClean(t)
}

// TestSDKErrors checks that failures say which call failed with what, and
// which are retried.
func TestSDKErrors(t *testing.T) {
	sc := agonestest.Start(t, agonestest.Config{Lists: map[string]agonestest.List{"l": {Capacity: 1}}})
	s := newSDK(t, sc, Config{Retry: Backoff{Initial: time.Millisecond, Max: time.Millisecond, MaxAttempts: 3}})
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		status   int
		do       func() error
		path     string
		attempts int
	}{
		{"500 not retried", 500, func() error { return s.Ready(ctx) }, "/ready", 1},
		{"404 not retried", 404, func() error { return s.Health(ctx) }, "/health", 1},
		{"503 retried", 503, func() error { return s.Health(ctx) }, "/health", 3},
		{"429 retried", 429, func() error { return s.SetLabel(ctx, "k", "v") }, "/metadata/label", 3},
		{"503 on an add not retried", 503, func() error { _, err := s.AddListValue(ctx, "l", "v"); return err }, "/v1beta1/lists/l:addValue", 1},
		{"503 on an increment not retried", 503, func() error { _, err := s.IncrementCounter(ctx, "c", 1); return err }, "/v1beta1/counters/c", 1},
		{"503 on a count set retried", 503, func() error { _, err := s.SetCounterCount(ctx, "c", 1); return err }, "/v1beta1/counters/c", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc.Fail(tc.status)
			defer sc.Fail(0)
			n := len(sc.Calls())
			err := tc.do()
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err %v; want an *Error", err)
			}
			if e.StatusCode != tc.status || e.Path != tc.path || e.Attempts != tc.attempts || !strings.Contains(e.Body, "injected failure") {
				t.Errorf("error %+v; want status %d, path %s, %d attempts, the body", e, tc.status, tc.path, tc.attempts)
			}
			if got := len(sc.Calls()) - n; got != tc.attempts {
				t.Errorf("%d requests; want %d", got, tc.attempts)
			}
			if msg := err.Error(); !strings.Contains(msg, "HTTP "+strconv.Itoa(tc.status)) || !strings.Contains(msg, tc.path) {
				t.Errorf("message %q lacks the status or path", msg)
			}
		})
	}
	// A refusal by the sidecar proper (not an injected failure).
	_, err := s.AddListValue(ctx, "l", "a")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.AddListValue(ctx, "l", "b")
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != 500 || !strings.Contains(e.Body, "No available capacity") || e.Call != "AddListValue l" {
		t.Errorf("err %v; want the sidecar's capacity refusal for AddListValue l", err)
	}
	if st := s.Stats(); st.Failures == 0 || !strings.Contains(st.LastError, "No available capacity") || st.LastErrorAt.IsZero() {
		t.Errorf("stats %+v; want the failures and the last error", st)
	}
	sc.CheckClean(t)
}

// TestSDKRetriesRefused: a sidecar that is not listening yet is retried,
// any call, since a refused connection never reached it.
func TestSDKRetriesRefused(t *testing.T) {
	checkNoLeak(t)
	sc := agonestest.Start(t, agonestest.Config{Down: true, UpAfterDials: 3, Counters: map[string]agonestest.Counter{"c": {Capacity: 5}}})
	s := newSDK(t, sc, Config{})
	ctx := context.Background()
	c, err := s.IncrementCounter(ctx, "c", 1)
	if err != nil {
		t.Fatal(err)
	}
	if c.Count != 1 || sc.Dials() != 3 || sc.Count("PATCH", "/v1beta1/counters/c") != 1 {
		t.Errorf("count %d, %d dials, %d requests; want 1, 3, 1", c.Count, sc.Dials(), sc.Count("PATCH", "/v1beta1/counters/c"))
	}
	if st := s.Stats(); st.Attempts != 3 || st.Calls != 1 || st.Failures != 0 {
		t.Errorf("stats %+v; want 3 attempts for 1 call", st)
	}

	// With the attempts used up, the refusal is the error.
	down := agonestest.Start(t, agonestest.Config{Down: true})
	s2 := newSDK(t, down, Config{})
	err = s2.Ready(ctx)
	var e *Error
	if !errors.As(err, &e) || e.Attempts != 3 || e.StatusCode != 0 || !refused(err) {
		t.Errorf("err %v; want a refused dial after 3 attempts", err)
	}
	if down.Dials() != 3 {
		t.Errorf("%d dials; want 3", down.Dials())
	}
}

// TestSDKHang: a sidecar that never answers costs a call RequestTimeout per
// attempt, and the caller's context cuts it short.
func TestSDKHang(t *testing.T) {
	checkNoLeak(t)
	sc := agonestest.Start(t, agonestest.Config{})
	sc.Hang()
	s := newSDK(t, sc, Config{RequestTimeout: 20 * time.Millisecond, Retry: Backoff{Initial: time.Millisecond, Max: time.Millisecond, MaxAttempts: 2}})
	var err error
	within(t, 5*time.Second, "Health against a hanging sidecar", func() { err = s.Health(context.Background()) })
	var e *Error
	if !errors.As(err, &e) || e.Attempts != 2 || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v; want a timeout after 2 attempts", err)
	}

	s1 := newSDK(t, sc, Config{RequestTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	within(t, 5*time.Second, "Ready with a short context", func() { err = s1.Ready(ctx) })
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &e) || e.Attempts != 1 {
		t.Errorf("err %v; want the caller's deadline after 1 attempt", err)
	}
	sc.Release()
	if err := s1.Ready(context.Background()); err != nil {
		t.Errorf("after Release: %v", err)
	}
}

// TestSDKBadResponses: what a broken gateway sends is an error, never a
// panic or an unbounded read.
func TestSDKBadResponses(t *testing.T) {
	checkNoLeak(t)
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(body))
	}))
	defer srv.Close()
	s, err := NewSDK(Config{Address: srv.Listener.Addr().String(), Retry: Backoff{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name, body string
		do         func() error
		errHas     string
	}{
		{"gameserver not json", "<html>", func() error { _, err := s.GameServer(ctx); return err }, "decoding"},
		{"gameserver wrong type", `{"status":{"ports":[{"port":"x"}]}}`, func() error { _, err := s.GameServer(ctx); return err }, "decoding"},
		{"count not a number", `{"count":"many"}`, func() error { _, err := s.GetPlayerCount(ctx); return err }, "not a decimal integer"},
		{"count too big", `{"count":"99999999999999999999"}`, func() error { _, err := s.GetPlayerCount(ctx); return err }, "not a decimal integer"},
		{"counter truncated", `{"name":"c","count":`, func() error { _, err := s.GetCounter(ctx, "c"); return err }, "decoding"},
		{"huge body", strings.Repeat(" ", maxResponseBytes+10), func() error { _, err := s.GetList(ctx, "l"); return err }, "over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body = tc.body
			err := tc.do()
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("err %v; want one mentioning %q", err, tc.errHas)
			}
			if err != nil && len(err.Error()) > 1000 {
				t.Errorf("error message is %d bytes; want it bounded", len(err.Error()))
			}
		})
	}
}

// TestSDKArgs: bad arguments are refused before anything is sent.
func TestSDKArgs(t *testing.T) {
	sc := agonestest.Start(t, agonestest.Config{})
	s := newSDK(t, sc, Config{})
	ctx := context.Background()
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name   string
		do     func() error
		errHas string
	}{
		{"label key empty", func() error { return s.SetLabel(ctx, "", "v") }, "label key"},
		{"label key with slash", func() error { return s.SetLabel(ctx, "a/b", "v") }, "label key"},
		{"label key too long", func() error { return s.SetLabel(ctx, long[:60], "v") }, "1 to 59"},
		{"label key ends badly", func() error { return s.SetLabel(ctx, "a-", "v") }, "ending in a letter or digit"},
		{"label value too long", func() error { return s.SetLabel(ctx, "k", long) }, "up to 63"},
		{"label value with space", func() error { return s.SetLabel(ctx, "k", "a b") }, "label \"k\" value"},
		{"annotation key bad", func() error { return s.SetAnnotation(ctx, "k!", "v") }, "annotation key"},
		{"annotation value too big", func() error { return s.SetAnnotation(ctx, "k", strings.Repeat("x", MaxAnnotationValue+1)) }, "bytes"},
		{"too much metadata", func() error {
			m := make(map[string]string)
			for i := range MaxMetadataEntries + 1 {
				m["k"+strconv.Itoa(i)] = "v"
			}
			return s.SetMetadata(ctx, m, nil)
		}, "labels and annotations"},
		{"metadata bad entry", func() error { return s.SetMetadata(ctx, map[string]string{"ok": "v"}, map[string]string{"": "x"}) }, "annotation key"},
		{"reserve negative", func() error { return s.Reserve(ctx, -time.Second) }, "Reserve"},
		{"counter name empty", func() error { _, err := s.GetCounter(ctx, ""); return err }, "Counter name"},
		{"counter name with slash", func() error { _, err := s.GetCounter(ctx, "a/b"); return err }, "Counter name"},
		{"list name with colon", func() error { _, err := s.AddListValue(ctx, "a:removeValue", "x"); return err }, "List name"},
		{"update sets nothing", func() error { _, err := s.UpdateCounter(ctx, "c", CounterUpdate{}); return err }, "sets nothing"},
		{"update negative count", func() error {
			n := int64(-1)
			_, err := s.UpdateCounter(ctx, "c", CounterUpdate{Count: &n})
			return err
		}, "0 or more"},
		{"increment by 0", func() error { _, err := s.IncrementCounter(ctx, "c", 0); return err }, "more than 0"},
		{"decrement by -1", func() error { _, err := s.DecrementCounter(ctx, "c", -1); return err }, "more than 0"},
		{"list capacity too big", func() error { _, err := s.SetListCapacity(ctx, "l", MaxListCapacity+1); return err }, "0 to 1000"},
		{"player capacity negative", func() error { return s.SetPlayerCapacity(ctx, -1) }, "0 or more"},
		{"connect empty id", func() error { _, err := s.PlayerConnect(ctx, ""); return err }, "empty player id"},
		{"disconnect empty id", func() error { _, err := s.PlayerDisconnect(ctx, ""); return err }, "empty player id"},
		{"connected id with slash", func() error { _, err := s.IsPlayerConnected(ctx, "a/b"); return err }, "player name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("err %v; want one mentioning %q", err, tc.errHas)
			}
		})
	}
	if calls := sc.Calls(); len(calls) != 0 {
		t.Errorf("%d requests sent for bad arguments; want none: %+v", len(calls), calls)
	}
}

func TestSDKSetMetadata(t *testing.T) {
	sc := agonestest.Start(t, agonestest.Config{})
	s := newSDK(t, sc, Config{})
	err := s.SetMetadata(context.Background(), map[string]string{"b": "2", "a": "1"}, map[string]string{"note": "hello world"})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range sc.Calls() {
		order = append(order, c.Body)
	}
	want := []string{`{"key":"a","value":"1"}`, `{"key":"b","value":"2"}`, `{"key":"note","value":"hello world"}`}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("bodies %q; want %q", order, want)
	}
	if l := sc.Labels(); l["agones.dev/sdk-a"] != "1" || l["agones.dev/sdk-b"] != "2" {
		t.Errorf("labels %v", l)
	}
	sc.CheckClean(t)
}

func TestWaitGameServer(t *testing.T) {
	checkNoLeak(t)
	sc := agonestest.Start(t, agonestest.Config{Down: true, UpAfterDials: 6, Name: "late"})
	s := newSDK(t, sc, Config{})
	gs, err := s.WaitGameServer(context.Background())
	if err != nil || gs.ObjectMeta.Name != "late" || sc.Dials() != 6 {
		t.Fatalf("got %+v, %v after %d dials; want the GameServer after 6", gs, err, sc.Dials())
	}

	down := agonestest.Start(t, agonestest.Config{Down: true})
	s2 := newSDK(t, down, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	within(t, 10*time.Second, "WaitGameServer", func() { gs, err = s2.WaitGameServer(ctx) })
	if gs != nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("got %v, %v; want the deadline and the refusal", gs, err)
	}
}

package backend

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHandlerIssuesToken(t *testing.T) {
	cfg, clock, _ := testConfig(t)
	cfg.Directory = mustStatic(t, "203.0.113.7:40000", "[2001:db8::9]:40001")
	clock.Advance(700 * time.Millisecond) // create is whole seconds
	h := mustHandler(t, cfg)
	resp := decodeTokenResponse(t, post(h, "4242", ""))

	ct, pt := openToken(t, resp.ConnectToken)
	create := uint64(testStart.Unix())
	if ct.ProtocolID != testProtocol || ct.CreateTimestamp != create || ct.ExpireTimestamp != create+30 || ct.TimeoutSeconds != DefaultTimeoutSeconds {
		t.Errorf("public token: protocol %#x create %d expire %d timeout %d; want %#x %d %d %d",
			ct.ProtocolID, ct.CreateTimestamp, ct.ExpireTimestamp, ct.TimeoutSeconds, uint64(testProtocol), create, create+30, DefaultTimeoutSeconds)
	}
	want := []netip.AddrPort{netip.MustParseAddrPort("203.0.113.7:40000"), netip.MustParseAddrPort("[2001:db8::9]:40001")}
	if !slices.Equal(ct.Addresses(), want) || !slices.Equal(pt.Addresses(), want) {
		t.Errorf("addresses: public %v, private %v; want %v in both", ct.Addresses(), pt.Addresses(), want)
	}
	if pt.ClientID != 4242 {
		t.Errorf("private client id %d; want the authenticated 4242", pt.ClientID)
	}
	if !bytes.HasPrefix(pt.UserData[:], []byte("user-4242\x00")) {
		t.Errorf("user data %q; want the hook's", pt.UserData[:12])
	}
	if resp.ClientID != "4242" || resp.ExpireSeconds != 30 || resp.TimeoutSeconds != DefaultTimeoutSeconds ||
		resp.CreatedAt != "2027-01-15T08:00:00Z" || resp.ExpiresAt != "2027-01-15T08:00:30Z" ||
		!slices.Equal(resp.Servers, []string{"203.0.113.7:40000", "[2001:db8::9]:40001"}) {
		t.Errorf("response %+v", resp)
	}
}

func TestHandlerInternalAddresses(t *testing.T) {
	cfg, _, _ := testConfig(t)
	d, err := NewStaticDirectory([]Server{
		{Public: netip.MustParseAddrPort("198.51.100.1:40000"), Internal: netip.MustParseAddrPort("10.0.0.1:40000")},
		{Public: netip.MustParseAddrPort("198.51.100.2:40000")},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Directory = d
	resp := decodeTokenResponse(t, post(mustHandler(t, cfg), "1", ""))
	ct, pt := openToken(t, resp.ConnectToken)
	if got := fmt.Sprint(ct.Addresses()); got != "[198.51.100.1:40000 198.51.100.2:40000]" {
		t.Errorf("public addresses %s", got)
	}
	if got := fmt.Sprint(pt.Addresses()); got != "[10.0.0.1:40000 198.51.100.2:40000]" {
		t.Errorf("internal addresses %s; want the internal one where given, else the public one", got)
	}
}

// The JSON of every outcome: exact key sets, status, headers.
func TestHandlerJSONShapes(t *testing.T) {
	cfg, _, _ := testConfig(t)
	cfg.RateLimit = RateLimit{PerSecond: 0.5, Burst: 1}
	cfg.MaxBodyBytes = 16
	cfg.Authenticate = func(r *http.Request) (uint64, []byte, error) {
		switch r.Header.Get("X-Case") {
		case "401":
			return 0, nil, &AuthError{Status: 401, Message: "who are you", Challenge: `Bearer realm="x"`}
		case "read":
			_, err := io.ReadAll(r.Body)
			return 0, nil, err
		}
		return 7, nil, nil
	}
	h := mustHandler(t, cfg)
	empty := mustHandler(t, Config{ProtocolID: 1, PrivateKey: testKey, Authenticate: cfg.Authenticate, Directory: emptyDirectory{}})

	req := func(method, c, body string) *http.Request {
		r := httptest.NewRequest(method, "/", strings.NewReader(body))
		r.Header.Set("X-Case", c)
		return r
	}
	huge := req("POST", "read", strings.Repeat("x", 17))
	huge.ContentLength = -1 // unknown length: only reading finds the limit
	tests := []struct {
		name    string
		h       http.Handler
		r       *http.Request
		status  int
		code    string
		headers map[string]string
	}{
		{"ok", h, req("POST", "", ""), 200, "", nil},
		{"rate limited", h, req("POST", "", ""), 429, "rate_limited", map[string]string{"Retry-After": "2"}},
		{"GET", h, req("GET", "", ""), 405, "method_not_allowed", map[string]string{"Allow": "POST"}},
		{"unauthorized", h, req("POST", "401", ""), 401, "unauthorized", map[string]string{"WWW-Authenticate": `Bearer realm="x"`}},
		{"declared too large", h, req("POST", "", strings.Repeat("x", 17)), 413, "body_too_large", nil},
		{"read too large", h, huge, 413, "body_too_large", nil},
		{"no servers", empty, req("POST", "", ""), 503, "no_servers", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			tt.h.ServeHTTP(w, tt.r)
			if w.Code != tt.status {
				t.Fatalf("status %d; want %d (body %s)", w.Code, tt.status, w.Body)
			}
			for k, v := range map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"} {
				if got := w.Header().Get(k); got != v {
					t.Errorf("%s: %q; want %q", k, got, v)
				}
			}
			for k, v := range tt.headers {
				if got := w.Header().Get(k); got != v {
					t.Errorf("%s: %q; want %q", k, got, v)
				}
			}
			var body map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q is not a JSON object: %v", w.Body, err)
			}
			if tt.status == 200 {
				wantKeys := []string{"client_id", "connect_token", "created_at", "expire_seconds", "expires_at", "servers", "timeout_seconds"}
				if got := sortedKeys(body); !slices.Equal(got, wantKeys) {
					t.Errorf("keys %v; want %v", got, wantKeys)
				}
				if _, ok := body["client_id"].(string); !ok {
					t.Errorf("client_id %v is not a string", body["client_id"])
				}
				if _, ok := body["servers"].([]any); !ok {
					t.Errorf("servers %v is not a list", body["servers"])
				}
				return
			}
			if got := sortedKeys(body); !slices.Equal(got, []string{"error"}) {
				t.Fatalf("keys %v; want [error]", got)
			}
			e, ok := body["error"].(map[string]any)
			if !ok || !slices.Equal(sortedKeys(e), []string{"code", "message"}) {
				t.Fatalf("error %v; want {code, message}", body["error"])
			}
			if e["code"] != tt.code || e["message"] == "" {
				t.Errorf("error %v; want code %q and a message", e, tt.code)
			}
		})
	}
}

func sortedKeys(m map[string]any) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

type emptyDirectory struct{}

func (emptyDirectory) Servers(_ context.Context, dst []Server) ([]Server, error) { return dst, nil }

type funcDirectory func(context.Context, []Server) ([]Server, error)

func (f funcDirectory) Servers(ctx context.Context, dst []Server) ([]Server, error) {
	return f(ctx, dst)
}

func TestHandlerAuthRefusals(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		status      int
		code        string
		message     string
		challenge   string
		notInAnswer string
	}{
		{"400", &AuthError{Status: 400, Message: "bad login"}, 400, "bad_request", "bad login", "", ""},
		{"401 with challenge", &AuthError{Status: 401, Message: "no", Challenge: "Bearer"}, 401, "unauthorized", "no", "Bearer", ""},
		{"403", &AuthError{Status: 403, Message: "banned"}, 403, "forbidden", "banned", "", ""},
		{"503", &AuthError{Status: 503, Message: "accounts down"}, 503, "unavailable", "accounts down", "", ""},
		{"other status is 401", &AuthError{Status: 418, Message: "teapot"}, 401, "unauthorized", "teapot", "", ""},
		{"wrapped AuthError", fmt.Errorf("db: %w", &AuthError{Status: 403, Message: "locked"}), 403, "forbidden", "locked", "", ""},
		{"plain error is not echoed", errors.New("lookup of password hunter2 failed"), 401, "unauthorized", "authentication failed", "", "hunter2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, _ := testConfig(t)
			var dirCalls atomic.Int32
			cfg.Directory = funcDirectory(func(_ context.Context, dst []Server) ([]Server, error) {
				dirCalls.Add(1)
				return dst, nil
			})
			cfg.Authenticate = func(*http.Request) (uint64, []byte, error) { return 9, nil, tt.err }
			w := post(mustHandler(t, cfg), "", "")
			var body ErrorResponse
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if w.Code != tt.status || body.Error.Code != tt.code || body.Error.Message != tt.message {
				t.Errorf("got %d %+v; want %d %s %q", w.Code, body.Error, tt.status, tt.code, tt.message)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate %q; want %q", got, tt.challenge)
			}
			if tt.notInAnswer != "" && strings.Contains(w.Body.String(), tt.notInAnswer) {
				t.Errorf("answer %s repeats the hook's error text", w.Body)
			}
			if dirCalls.Load() != 0 {
				t.Error("a refused caller reached the directory")
			}
		})
	}
}

func TestHandlerUserDataBound(t *testing.T) {
	for _, n := range []int{0, 256, 257} {
		cfg, _, _ := testConfig(t)
		cfg.Authenticate = func(*http.Request) (uint64, []byte, error) { return 1, bytes.Repeat([]byte{0xee}, n), nil }
		w := post(mustHandler(t, cfg), "", "")
		if n <= 256 {
			_, pt := openToken(t, decodeTokenResponse(t, w).ConnectToken)
			if !bytes.Equal(pt.UserData[:n], bytes.Repeat([]byte{0xee}, n)) {
				t.Errorf("%d bytes of user data: not in the token", n)
			}
		} else if w.Code != 500 {
			t.Errorf("%d bytes of user data: status %d; want 500", n, w.Code)
		}
	}
}

func TestHandlerRateLimit(t *testing.T) {
	cfg, clock, _ := testConfig(t)
	cfg.RateLimit = RateLimit{PerSecond: 1, Burst: 3}
	var dirCalls atomic.Int32
	static := cfg.Directory
	cfg.Directory = funcDirectory(func(ctx context.Context, dst []Server) ([]Server, error) {
		dirCalls.Add(1)
		return static.Servers(ctx, dst)
	})
	h := mustHandler(t, cfg)
	for i := range 3 {
		if w := post(h, "1", ""); w.Code != 200 {
			t.Fatalf("request %d: status %d; want 200 within the burst", i, w.Code)
		}
	}
	w := post(h, "1", "")
	if w.Code != 429 || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("past the burst: status %d Retry-After %q; want 429 and 1", w.Code, w.Header().Get("Retry-After"))
	}
	if dirCalls.Load() != 3 {
		t.Errorf("directory called %d times; a limited request must not reach it", dirCalls.Load())
	}
	if w := post(h, "2", ""); w.Code != 200 {
		t.Errorf("another client: status %d; want 200 (limits are per identity)", w.Code)
	}
	clock.Advance(999 * time.Millisecond)
	if w := post(h, "1", ""); w.Code != 429 {
		t.Errorf("after 0.999 s: status %d; want 429", w.Code)
	}
	clock.Advance(time.Millisecond)
	if w := post(h, "1", ""); w.Code != 200 {
		t.Errorf("after 1 s: status %d; want 200", w.Code)
	}
}

// The restart rule: a server started at S with MaxConnectTokenLifetime L
// refuses tokens whose expire timestamp is below S+L. Tokens carry exactly
// TokenLifetime, so with TokenLifetime == L every token minted from the
// server's start second on is admitted, and none minted before it.
func TestHandlerRestartRuleLifetime(t *testing.T) {
	admits := func(expire uint64, serverStart time.Time, lifetime time.Duration) bool {
		return expire >= uint64(serverStart.Unix())+uint64(lifetime/time.Second)
	}
	for _, lifetime := range []time.Duration{time.Second, defaultTokenLifetime, time.Hour, maxTokenLifetime} {
		cfg, clock, _ := testConfig(t)
		if lifetime != defaultTokenLifetime {
			cfg.TokenLifetime = lifetime
		}
		h := mustHandler(t, cfg)
		serverStart := clock.Now().Add(300 * time.Millisecond)
		clock.Advance(-time.Second) // minted just before the server started
		early, _ := openToken(t, decodeTokenResponse(t, post(h, "1", "")).ConnectToken)
		clock.Advance(time.Second) // the server's start second
		resp := decodeTokenResponse(t, post(h, "2", ""))
		ct, _ := openToken(t, resp.ConnectToken)
		if got := ct.ExpireTimestamp - ct.CreateTimestamp; got != uint64(lifetime/time.Second) || resp.ExpireSeconds != int64(got) {
			t.Errorf("lifetime %v: token lives %d s (response says %d); want exactly the lifetime", lifetime, got, resp.ExpireSeconds)
		}
		if !admits(ct.ExpireTimestamp, serverStart, lifetime) {
			t.Errorf("lifetime %v: a token minted in the server's start second would be refused", lifetime)
		}
		if admits(early.ExpireTimestamp, serverStart, lifetime) {
			t.Errorf("lifetime %v: a token minted before the server started would be admitted", lifetime)
		}
	}
	// A backend lifetime shorter than the servers' makes fresh servers
	// refuse new tokens: why the two must be equal.
	cfg, clock, _ := testConfig(t)
	cfg.TokenLifetime = 20 * time.Second
	ct, _ := openToken(t, decodeTokenResponse(t, post(mustHandler(t, cfg), "1", "")).ConnectToken)
	if admits(ct.ExpireTimestamp, clock.Now(), defaultTokenLifetime) {
		t.Error("a 20 s token was admitted by a server with a 30 s rule that started when it was minted")
	}
}

func TestNewHandlerConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   []string
	}{
		{"short key", func(c *Config) { c.PrivateKey = c.PrivateKey[:31] }, []string{"PrivateKey of 31 bytes; want 32"}},
		{"no key", func(c *Config) { c.PrivateKey = nil }, []string{"PrivateKey of 0 bytes"}},
		{"no auth", func(c *Config) { c.Authenticate = nil }, []string{"Authenticate is nil"}},
		{"no directory", func(c *Config) { c.Directory = nil }, []string{"Directory is nil"}},
		{"negative lifetime", func(c *Config) { c.TokenLifetime = -time.Second }, []string{"TokenLifetime -1s", "whole seconds from 1s to 24h0m0s"}},
		{"fractional lifetime", func(c *Config) { c.TokenLifetime = 1500 * time.Millisecond }, []string{"TokenLifetime 1.5s", "whole seconds"}},
		{"lifetime over a day", func(c *Config) { c.TokenLifetime = maxTokenLifetime + time.Second }, []string{"TokenLifetime 24h0m1s", "MaxConnectTokenLifetime"}},
		{"timeout -2", func(c *Config) { c.TimeoutSeconds = -2 }, []string{"TimeoutSeconds -2", "1 to 86400, or -1"}},
		{"timeout too long", func(c *Config) { c.TimeoutSeconds = 86401 }, []string{"TimeoutSeconds 86401"}},
		{"rate", func(c *Config) { c.RateLimit.PerSecond = -1 }, []string{"RateLimit.PerSecond -1", "more than 0"}},
		{"burst", func(c *Config) { c.RateLimit.Burst = -1 }, []string{"RateLimit.Burst -1", "1 to"}},
		{"identities", func(c *Config) { c.RateLimit.MaxIdentities = 1 << 25 }, []string{"RateLimit.MaxIdentities 33554432"}},
		{"body", func(c *Config) { c.MaxBodyBytes = 2 << 20 }, []string{"MaxBodyBytes 2097152", "1 to 1048576"}},
		{"directory timeout", func(c *Config) { c.DirectoryTimeout = -1 }, []string{"DirectoryTimeout -1ns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, _ := testConfig(t)
			tt.modify(&cfg)
			_, err := NewHandler(cfg)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// The directory's answer is cleaned: unusable servers dropped, at most 32
// kept, errors answered 503 without their text.
func TestHandlerDirectoryResults(t *testing.T) {
	many := func(_ context.Context, dst []Server) ([]Server, error) {
		dst = append(dst, Server{Public: netip.MustParseAddrPort("0.0.0.0:40000")}, Server{Public: netip.MustParseAddrPort("192.0.2.1:0")})
		for i := range 40 {
			dst = append(dst, Server{Public: netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)}), 40000)})
		}
		return dst, nil
	}
	cfg, _, logs := testConfig(t)
	cfg.Directory = funcDirectory(many)
	resp := decodeTokenResponse(t, post(mustHandler(t, cfg), "1", ""))
	if len(resp.Servers) != 32 || resp.Servers[0] != "192.0.2.1:40000" || resp.Servers[31] != "192.0.2.32:40000" {
		t.Errorf("servers %v; want the first 32 usable ones", resp.Servers)
	}
	if !strings.Contains(logs.String(), "unusable server") {
		t.Error("unusable servers not logged")
	}

	cfg.Directory = funcDirectory(func(context.Context, []Server) ([]Server, error) {
		return nil, errors.New("allocator at 10.9.8.7 said no")
	})
	w := post(mustHandler(t, cfg), "1", "")
	if w.Code != 503 || strings.Contains(w.Body.String(), "10.9.8.7") {
		t.Errorf("directory error: %d %s; want 503 without the error's text", w.Code, w.Body)
	}
}

// The directory gets a context with the configured deadline.
func TestHandlerDirectoryTimeout(t *testing.T) {
	cfg, _, _ := testConfig(t)
	cfg.DirectoryTimeout = 10 * time.Millisecond
	cfg.Directory = funcDirectory(func(ctx context.Context, dst []Server) ([]Server, error) {
		<-ctx.Done() // a directory that never answers
		return dst, ctx.Err()
	})
	if w := post(mustHandler(t, cfg), "1", ""); w.Code != 503 {
		t.Errorf("status %d; want 503", w.Code)
	}
}

// The private key appears in no log record and no response body, nor in
// the Config or Handler when printed or logged.
func TestHandlerNeverShowsKey(t *testing.T) {
	cfg, _, logs := testConfig(t)
	cfg.RateLimit = RateLimit{PerSecond: 1, Burst: 2}
	fail := false
	cfg.Authenticate = func(r *http.Request) (uint64, []byte, error) {
		if fail {
			return 0, nil, errors.New("refused")
		}
		return idAuth(r)
	}
	h := mustHandler(t, cfg)
	var bodies strings.Builder
	record := func(w *httptest.ResponseRecorder) {
		bodies.WriteString(w.Body.String())
		for k, v := range w.Header() {
			bodies.WriteString(k + ": " + strings.Join(v, ",") + "\n")
		}
	}
	for range 3 {
		record(post(h, "5", "")) // 200, 200, 429
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	record(w)
	fail = true
	record(post(h, "5", ""))

	for _, lh := range []slog.Handler{slog.NewJSONHandler(logs, nil), slog.NewTextHandler(logs, nil)} {
		slog.New(lh).Info("config", slog.Any("config", cfg), slog.Any("handler", h))
	}
	printed := fmt.Sprintf("%v %+v %#v %s %x %X %d %q %v %+v", cfg, cfg, cfg, cfg, cfg, cfg, cfg, cfg, h, h)

	if !strings.Contains(logs.String(), "connect token issued") || !strings.Contains(bodies.String(), "rate_limited") {
		t.Fatalf("the requests did not run as planned; logs:\n%s", logs)
	}
	forms := []string{
		hex.EncodeToString(testKey), strings.ToUpper(hex.EncodeToString(testKey)),
		base64.StdEncoding.EncodeToString(testKey), base64.RawStdEncoding.EncodeToString(testKey),
		base64.URLEncoding.EncodeToString(testKey), base64.RawURLEncoding.EncodeToString(testKey),
		fmt.Sprint(testKey), // [12 34 ...]
		string(testKey),
	}
	for name, text := range map[string]string{"logs": logs.String(), "responses": bodies.String(), "printed": printed} {
		for _, f := range forms {
			if strings.Contains(text, f) {
				t.Errorf("the private key (as %.16q...) is in the %s", f, name)
			}
		}
	}
	if !strings.Contains(printed, "[redacted]") {
		t.Errorf("printed config %q does not say the key is redacted", printed)
	}
}

// Many callers at once, run with -race: distinct clients all get tokens;
// one client hammering from many goroutines gets exactly its burst.
func TestHandlerConcurrent(t *testing.T) {
	cfg, _, _ := testConfig(t)
	cfg.RateLimit = RateLimit{PerSecond: 1e-3, Burst: 5, MaxIdentities: 1024}
	h := mustHandler(t, cfg)
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := srv.Client()

	const goroutines, perGoroutine = 16, 8
	var ok, limited, other atomic.Int32
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				for _, id := range []string{strconv.Itoa(1000 + g*perGoroutine + i), "1"} {
					req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
					req.Header.Set("X-Test-Client", id)
					resp, err := client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					var tr TokenResponse
					err = json.NewDecoder(resp.Body).Decode(&tr)
					resp.Body.Close()
					switch {
					case resp.StatusCode == 200 && err == nil && tr.ClientID == id:
						ok.Add(1)
					case resp.StatusCode == 429 && id == "1":
						limited.Add(1)
					default:
						other.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	total := int32(goroutines * perGoroutine)
	if ok.Load() != total+5 || limited.Load() != total-5 || other.Load() != 0 {
		t.Errorf("%d ok, %d limited, %d other; want %d ok (every distinct client and client 1's burst of 5), %d limited",
			ok.Load(), limited.Load(), other.Load(), total+5, total-5)
	}
}

package backend

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
)

// testKey looks random, so finding its hex or base64 in a log is no
// accident.
var testKey = func() []byte { k := sha256.Sum256([]byte("backend test key")); return k[:] }()

const testProtocol = 0x1122334455667788

var testStart = time.Unix(1_800_000_000, 0)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: testStart} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer is a log sink that handlers may write from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// idAuth authenticates with the decimal header X-Test-Client.
func idAuth(r *http.Request) (uint64, []byte, error) {
	var id uint64
	for _, c := range r.Header.Get("X-Test-Client") {
		id = id*10 + uint64(c-'0')
	}
	return id, []byte("user-" + r.Header.Get("X-Test-Client")), nil
}

func mustStatic(t testing.TB, addrs ...string) *StaticDirectory {
	t.Helper()
	var servers []Server
	for _, a := range addrs {
		servers = append(servers, Server{Public: netip.MustParseAddrPort(a)})
	}
	d, err := NewStaticDirectory(servers)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// testConfig is a valid Config with a fake clock, the X-Test-Client
// authenticator, one static server, and logs into the returned buffer.
func testConfig(t testing.TB) (Config, *fakeClock, *syncBuffer) {
	clock := newFakeClock()
	logs := &syncBuffer{}
	return Config{
		ProtocolID:   testProtocol,
		PrivateKey:   append([]byte(nil), testKey...),
		Authenticate: idAuth,
		Directory:    mustStatic(t, "203.0.113.7:40000"),
		Logger:       slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:          clock.Now,
	}, clock, logs
}

func mustHandler(t testing.TB, cfg Config) *Handler {
	t.Helper()
	h, err := NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// post sends one request straight to the handler.
func post(h http.Handler, client string, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/token", strings.NewReader(body))
	r.RemoteAddr = "127.0.0.1:5555"
	if client != "" {
		r.Header.Set("X-Test-Client", client)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func decodeTokenResponse(t testing.TB, w *httptest.ResponseRecorder) TokenResponse {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status %d, body %s", w.Code, w.Body)
	}
	var resp TokenResponse
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&resp); err != nil {
		t.Fatalf("body %s: %v", w.Body, err)
	}
	return resp
}

// openToken decodes a standard base64 token and decrypts its private part
// with testKey.
func openToken(t testing.TB, s string) (codec.ConnectToken, codec.PrivateToken) {
	t.Helper()
	raw, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		t.Fatalf("connect_token is not padded standard base64: %v", err)
	}
	var ct codec.ConnectToken
	if err := codec.ReadConnectToken(raw, &ct); err != nil {
		t.Fatal(err)
	}
	key, err := aead.NewTokenKey(testKey)
	if err != nil {
		t.Fatal(err)
	}
	priv := ct.PrivateData
	if err := key.OpenPrivateToken(priv[:], ct.ProtocolID, ct.ExpireTimestamp, ct.Nonce[:]); err != nil {
		t.Fatalf("private token does not open with the key: %v", err)
	}
	var pt codec.PrivateToken
	if err := codec.ReadPrivateToken(priv[:], &pt); err != nil {
		t.Fatal(err)
	}
	return ct, pt
}

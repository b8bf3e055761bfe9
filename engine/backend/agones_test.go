package backend

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeAllocator is the Agones allocator service's REST API as far as the
// directory uses it: POST /gameserverallocation, mTLS required.
type fakeAllocator struct {
	*httptest.Server
	clientTLS *tls.Config // a client certificate the fake trusts, and its CA
	status    atomic.Int32
	reply     atomic.Pointer[string]
	requests  atomic.Int32
	lastBody  atomic.Pointer[map[string]any]
}

func newFakeAllocator(t *testing.T) *fakeAllocator {
	f := &fakeAllocator{}
	f.status.Store(200)
	ok := `{"gameServerName":"fleet-abc12-x7k2p","ports":[{"name":"metrics","port":9090},{"name":"default","port":7463}],"address":"203.0.113.50","addresses":[{"type":"InternalIP","address":"10.0.0.5"},{"type":"ExternalIP","address":"203.0.113.50"}],"nodeName":"node-1","source":"local"}`
	f.reply.Store(&ok)
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if r.Method != http.MethodPost || r.URL.Path != "/gameserverallocation" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, `{"code":12,"message":"not found"}`, http.StatusNotFound)
			return
		}
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, `{"code":3,"message":"bad json"}`, http.StatusBadRequest)
			return
		}
		f.lastBody.Store(&body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(f.status.Load()))
		io.WriteString(w, *f.reply.Load())
	}))
	cert, pool := selfSignedClientCert(t)
	f.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	f.StartTLS()
	t.Cleanup(f.Close)
	roots := x509.NewCertPool()
	roots.AddCert(f.Certificate())
	f.clientTLS = &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}
	return f
}

func selfSignedClientCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "token-service"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(parsed)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: parsed}, pool
}

func (f *fakeAllocator) directory(t *testing.T, modify func(*AgonesConfig)) *AgonesAllocatorDirectory {
	cfg := AgonesConfig{URL: f.URL, Namespace: "games", TLSConfig: f.clientTLS}
	if modify != nil {
		modify(&cfg)
	}
	d, err := NewAgonesAllocatorDirectory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAgonesAllocatorDirectory(t *testing.T) {
	f := newFakeAllocator(t)
	d := f.directory(t, func(c *AgonesConfig) {
		c.Selectors = []map[string]string{{"agones.dev/fleet": "green"}, {"agones.dev/fleet": "blue", "version": "2"}}
	})
	got, err := d.Servers(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if names := serverNames(got); len(names) != 1 || names[0] != "203.0.113.50:7463" {
		t.Errorf("servers %v; want the allocated address and the port named default", names)
	}
	want := map[string]any{
		"namespace": "games",
		"gameServerSelectors": []any{
			map[string]any{"matchLabels": map[string]any{"agones.dev/fleet": "green"}},
			map[string]any{"matchLabels": map[string]any{"agones.dev/fleet": "blue", "version": "2"}},
		},
	}
	if body := *f.lastBody.Load(); !reflect.DeepEqual(body, want) {
		t.Errorf("allocation request %v; want %v", body, want)
	}
}

func TestAgonesAllocatorDirectoryResponses(t *testing.T) {
	tests := []struct {
		name   string
		status int
		reply  string
		port   string
		want   string // a server, or an error's text
		noSrv  bool   // the error wraps ErrNoServers
	}{
		{"hostname address, ExternalIP", 200, `{"gameServerName":"gs","ports":[{"name":"default","port":7000}],"address":"node-1.example.com","addresses":[{"type":"Hostname","address":"node-1"},{"type":"InternalIP","address":"10.0.0.5"},{"type":"ExternalIP","address":"2001:db8::5"}]}`, "", "[2001:db8::5]:7000", false},
		{"named port", 200, `{"gameServerName":"gs","ports":[{"name":"default","port":7000},{"name":"udp","port":7100}],"address":"198.51.100.7"}`, "udp", "198.51.100.7:7100", false},
		{"older response without addresses", 200, `{"gameServerName":"gs","ports":[{"name":"default","port":7000}],"address":"198.51.100.7","nodeName":"n"}`, "", "198.51.100.7:7000", false},
		{"no IP anywhere", 200, `{"gameServerName":"gs","ports":[{"name":"default","port":7000}],"address":"node-1.example.com","addresses":[{"type":"InternalIP","address":"10.0.0.5"}]}`, "", `"gs" (now allocated): address "node-1.example.com" is not an IP address and it has no ExternalIP`, false},
		{"no such port", 200, `{"gameServerName":"gs","ports":[{"name":"game","port":7000}],"address":"198.51.100.7"}`, "", `no port named "default" among 1 ports`, false},
		{"port 0", 200, `{"gameServerName":"gs","ports":[{"name":"default","port":0}],"address":"198.51.100.7"}`, "", "port \"default\" is 0; want 1 to 65535", false},
		{"port too big", 200, `{"gameServerName":"gs","ports":[{"name":"default","port":70000}],"address":"198.51.100.7"}`, "", "is 70000", false},
		{"unspecified address", 200, `{"gameServerName":"gs","ports":[{"name":"default","port":7000}],"address":"0.0.0.0"}`, "", "want a specific IPv4 or IPv6 address", false},
		{"not JSON", 200, `<html>`, "", "allocation response", false},
		{"none free", 429, `{"code":8,"message":"there is no available GameServer to allocate","details":[]}`, "", "no game server to allocate (status 429): there is no available GameServer", true},
		{"refused", 403, `{"code":7,"message":"namespace games is not allowed"}`, "", "status 403: namespace games is not allowed", false},
		{"refused without JSON", 500, `oops`, "", "status 500: no error message", false},
		{"control bytes in message", 500, `{"code":13,"message":"a\u0000b\nc"}`, "", "status 500: a?b?c", false},
		{"too large", 200, `{"gameServerName":"` + strings.Repeat("x", maxAgonesResponse) + `"}`, "", "response over 65536 bytes", false},
	}
	f := newFakeAllocator(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.status.Store(int32(tt.status))
			f.reply.Store(&tt.reply)
			d := f.directory(t, func(c *AgonesConfig) { c.PortName = tt.port })
			got, err := d.Servers(context.Background(), nil)
			if err == nil {
				if names := serverNames(got); len(names) != 1 || names[0] != tt.want {
					t.Fatalf("servers %v; want %s", names, tt.want)
				}
				return
			}
			if !strings.Contains(err.Error(), tt.want) || errors.Is(err, ErrNoServers) != tt.noSrv {
				t.Fatalf("error %v; want one saying %q (ErrNoServers: %v)", err, tt.want, tt.noSrv)
			}
		})
	}
}

// Without the client certificate the allocator refuses the connection.
func TestAgonesAllocatorDirectoryNeedsClientCert(t *testing.T) {
	f := newFakeAllocator(t)
	noCert := f.clientTLS.Clone()
	noCert.Certificates = nil
	d := f.directory(t, func(c *AgonesConfig) { c.TLSConfig = noCert })
	if _, err := d.Servers(context.Background(), nil); err == nil {
		t.Fatal("allocated without a client certificate")
	}
	if f.requests.Load() != 0 {
		t.Error("a request got through without a client certificate")
	}
	// A caller's own client works the same as TLSConfig.
	d = f.directory(t, func(c *AgonesConfig) {
		c.TLSConfig = nil
		c.Client = &http.Client{Transport: &http.Transport{TLSClientConfig: f.clientTLS}}
	})
	if _, err := d.Servers(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// Through the handler: one allocation per token, none for a refused or
// rate-limited caller, and 503 when the fleet is exhausted.
func TestHandlerWithAgones(t *testing.T) {
	f := newFakeAllocator(t)
	cfg, _, _ := testConfig(t)
	cfg.Directory = f.directory(t, nil)
	cfg.RateLimit = RateLimit{PerSecond: 1e-3, Burst: 1}
	h := mustHandler(t, cfg)
	resp := decodeTokenResponse(t, post(h, "1", ""))
	if ct, _ := openToken(t, resp.ConnectToken); ct.Addresses()[0].String() != "203.0.113.50:7463" {
		t.Errorf("token lists %v", ct.Addresses())
	}
	if w := post(h, "1", ""); w.Code != http.StatusTooManyRequests {
		t.Errorf("second request: %d; want 429", w.Code)
	}
	if n := f.requests.Load(); n != 1 {
		t.Errorf("%d allocations; want 1 (a rate-limited caller must not allocate)", n)
	}
	exhausted := `{"code":8,"message":"there is no available GameServer to allocate"}`
	f.status.Store(429)
	f.reply.Store(&exhausted)
	if w := post(h, "2", ""); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "no_servers") {
		t.Errorf("fleet exhausted: %d %s; want 503 no_servers", w.Code, w.Body)
	}
}

func TestNewAgonesAllocatorDirectoryErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  AgonesConfig
		want string
	}{
		{"no URL", AgonesConfig{Namespace: "x"}, `URL ""; want https://host[:port]`},
		{"bad scheme", AgonesConfig{URL: "grpc://x", Namespace: "x"}, "URL"},
		{"query", AgonesConfig{URL: "https://x/?a", Namespace: "x"}, "URL"},
		{"no namespace", AgonesConfig{URL: "https://x"}, "Namespace is empty"},
		{"selectors", AgonesConfig{URL: "https://x", Namespace: "x", Selectors: make([]map[string]string, 17)}, "17 selectors; allowed 0 to 16"},
		{"timeout", AgonesConfig{URL: "https://x", Namespace: "x", Timeout: time.Hour}, "Timeout 1h0m0s; allowed up to 1m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewAgonesAllocatorDirectory(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one saying %q", err, tt.want)
			}
		})
	}
}

package backend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// postQuery is post with a query string.
func postQuery(h http.Handler, client, query string) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/token?"+query, strings.NewReader(""))
	r.RemoteAddr = "127.0.0.1:5555"
	r.Header.Set("X-Test-Client", client)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestHandlerWebTransport: transport=webtransport gets a token naming the
// WebTransport servers, with their certificate hashes; a UDP request is
// answered as before, without either field.
func TestHandlerWebTransport(t *testing.T) {
	cfg, _, _ := testConfig(t)
	h1, h2 := sha256.Sum256([]byte("cert one")), sha256.Sum256([]byte("cert two"))
	hashes := [][32]byte{h1}
	cfg.WebTransport = &WebTransportConfig{
		Directory:         mustStatic(t, "203.0.113.7:443", "[2001:db8::7]:443"),
		CertificateHashes: func() [][32]byte { return hashes },
	}
	h := mustHandler(t, cfg)

	resp := decodeTokenResponse(t, postQuery(h, "1", "transport=webtransport"))
	if strings.Join(resp.Servers, " ") != "203.0.113.7:443 [2001:db8::7]:443" || resp.Transport != "webtransport" {
		t.Fatalf("servers %v, transport %q; want the WebTransport servers", resp.Servers, resp.Transport)
	}
	if len(resp.CertificateHashes) != 1 || resp.CertificateHashes[0] != hex.EncodeToString(h1[:]) {
		t.Fatalf("certificate_hashes %v; want [%x]", resp.CertificateHashes, h1)
	}
	ct, pt := openToken(t, resp.ConnectToken)
	want := []netip.AddrPort{netip.MustParseAddrPort("203.0.113.7:443"), netip.MustParseAddrPort("[2001:db8::7]:443")}
	for i, a := range want {
		if ct.ServerAddresses[i] != a || pt.ServerAddresses[i] != a {
			t.Fatalf("token address %d: %v / %v; want %v", i, ct.ServerAddresses[i], pt.ServerAddresses[i], a)
		}
	}

	// The hashes are asked for at each request: a new certificate shows.
	hashes = [][32]byte{h1, h2}
	resp = decodeTokenResponse(t, postQuery(h, "2", "transport=webtransport"))
	if len(resp.CertificateHashes) != 2 || resp.CertificateHashes[1] != hex.EncodeToString(h2[:]) {
		t.Fatalf("certificate_hashes %v after a change; want both", resp.CertificateHashes)
	}

	for _, q := range []string{"", "transport=udp"} {
		w := postQuery(h, "3"+q, q)
		if strings.Contains(w.Body.String(), "certificate_hashes") || strings.Contains(w.Body.String(), "transport") {
			t.Fatalf("%q: UDP answer %s carries WebTransport fields", q, w.Body)
		}
		resp := decodeTokenResponse(t, w)
		if strings.Join(resp.Servers, " ") != "203.0.113.7:40000" {
			t.Fatalf("%q: servers %v; want the UDP server", q, resp.Servers)
		}
	}
}

func TestHandlerTransportRefusals(t *testing.T) {
	cfg, _, _ := testConfig(t)
	udpOnly := mustHandler(t, cfg)
	cfg.WebTransport = &WebTransportConfig{Directory: mustStatic(t, "203.0.113.7:443")}
	both := mustHandler(t, cfg)
	for _, tc := range []struct {
		name  string
		h     *Handler
		query string
		want  string
	}{
		{"unknown", both, "transport=webrtc", "want udp or webtransport"},
		{"twice", both, "transport=udp&transport=webtransport", "more than once"},
		{"not served", udpOnly, "transport=webtransport", "not served here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := postQuery(tc.h, "9", tc.query)
			if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), tc.want) || !strings.Contains(w.Body.String(), `"bad_request"`) {
				t.Fatalf("status %d body %s; want 400 bad_request about %q", w.Code, w.Body, tc.want)
			}
		})
	}
	// Without hashes configured, the field is absent.
	w := postQuery(both, "10", "transport=webtransport")
	if resp := decodeTokenResponse(t, w); resp.CertificateHashes != nil || strings.Contains(w.Body.String(), "certificate_hashes") {
		t.Fatalf("certificate_hashes present without a source: %s", w.Body)
	}
	if _, err := NewHandler(Config{ProtocolID: 1, PrivateKey: testKey, Authenticate: idAuth, Directory: mustStatic(t, "203.0.113.7:1"),
		WebTransport: &WebTransportConfig{}}); err == nil || !strings.Contains(err.Error(), "WebTransport.Directory") {
		t.Fatalf("WebTransport without a directory: %v", err)
	}
}

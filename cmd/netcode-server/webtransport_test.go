package main

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/webtransport"
	"github.com/netcode-go/netcode/cmd/internal/cli"
)

// TestWebTransportUsage: the -webtransport flags' mistakes exit 2 naming
// the flag, before anything listens.
func TestWebTransportUsage(t *testing.T) {
	withKey := map[string]string{keyEnv: newKeyHex(t)}
	for _, tc := range []exitCase{
		{args: []string{"-webtransport", "localhost:443"}, want: "-webtransport: want IPv4:port or [IPv6]:port, or off"},
		{args: []string{"-webtransport-cert", "/c", "-webtransport-key", "/k"}, want: "-webtransport-cert needs -webtransport ADDR"},
		{args: []string{"-webtransport-hash-file", "/h"}, want: "-webtransport-hash-file needs -webtransport ADDR"},
		{args: []string{"-webtransport", "127.0.0.1:0", "-webtransport-cert", "/c"}, want: "-webtransport-cert and -webtransport-key go together"},
		{args: []string{"-webtransport", "127.0.0.1:0", "-webtransport-origin", "game.example"}, want: "-webtransport-origin: \"game.example\": want an origin"},
		{args: []string{"-protocol", "1", "-bind", "127.0.0.1:0", "-webtransport", "0.0.0.0:4433"}, env: withKey,
			want: "a development certificate is for loopback addresses only"},
		{args: []string{"-bind", "127.0.0.1:0", "-webtransport", "0.0.0.0:4433"}, want: "-webtransport 0.0.0.0:4433 is not one"},
	} {
		code, _, stderr := runCase(t, tc)
		if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, cli.ExitUsage, tc.want)
		}
	}
	// An unreadable certificate is a failure, not a usage error.
	dir := t.TempDir()
	code, _, stderr := runCase(t, exitCase{args: []string{"-bind", "127.0.0.1:0", "-webtransport", "127.0.0.1:0",
		"-webtransport-cert", filepath.Join(dir, "none.pem"), "-webtransport-key", filepath.Join(dir, "none.key")}})
	if code != cli.ExitFailure || !strings.Contains(stderr, "-webtransport-cert") {
		t.Errorf("missing certificate files: exit %d, stderr %q", code, stderr)
	}
}

// TestWebTransportServes: with -webtransport the server serves browsers
// with a development certificate whose hash it logs and writes to
// -webtransport-hash-file; a client pinning that hash opens a session.
// With -webtransport-cert and -key it serves that certificate.
func TestWebTransportServes(t *testing.T) {
	dir := t.TempDir()
	cert, err := webtransport.DevCertificate(24*time.Hour, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	given := sha256.Sum256(cert.Certificate[0])

	for _, tc := range []struct {
		name string
		args []string
		want string // the hash, "" for any (development)
	}{
		{"development", nil, ""},
		{"configured", []string{"-webtransport-cert", certFile, "-webtransport-key", keyFile}, hex.EncodeToString(given[:])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hashFile := filepath.Join(t.TempDir(), "hash")
			logs, fields, stop := serve(t, append([]string{"-bind", "127.0.0.1:0", "-webtransport", "127.0.0.1:0",
				"-webtransport-hash-file", hashFile}, tc.args...), nil)
			b, err := os.ReadFile(hashFile)
			if err != nil {
				t.Fatal(err)
			}
			h := strings.TrimSpace(string(b))
			hb, err := hex.DecodeString(h)
			if err != nil || len(hb) != 32 || b[len(b)-1] != '\n' {
				t.Fatalf("hash file %q; want 64 hex digits and a newline", b)
			}
			if tc.want != "" && h != tc.want {
				t.Fatalf("hash %s; want the configured certificate's %s", h, tc.want)
			}
			if !strings.Contains(logs.String(), h) {
				t.Fatalf("the hash is not logged:\n%s", logs)
			}
			// The WebTransport address is the second public address.
			pub := fields["public"].([]any)
			if len(pub) != 2 {
				t.Fatalf("public %v; want the UDP and the WebTransport addresses", pub)
			}
			addr := netip.MustParseAddrPort(pub[1].(string))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			cc, err := webtransport.Dial(ctx, "https://"+addr.String()+webtransport.DefaultPath, [32]byte(hb))
			if err != nil {
				t.Fatalf("dial %v pinning the published hash: %v", addr, err)
			}
			cc.Close()
			if code := stop(); code != 0 {
				t.Fatalf("exit %d", code)
			}
		})
	}
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine/backend"
)

var (
	hashA = strings.Repeat("ab", 32)
	hashB = strings.Repeat("cd", 32)
)

func TestServeWebTransportFlagErrors(t *testing.T) {
	ok := []string{"serve", "-protocol", "1", "-auth", "dev", "-servers", "192.0.2.1:40000"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"hash without server", []string{"-webtransport-cert-hash", hashA}, 2, "need -webtransport-server ADDR"},
		{"hash file without server", []string{"-webtransport-cert-hash-file", "/h"}, 2, "need -webtransport-server ADDR"},
		{"bad server", []string{"-webtransport-server", "nowhere"}, 2, `-webtransport-server, server 1: "nowhere"`},
		{"unspecified server", []string{"-webtransport-server", "0.0.0.0:443"}, 2, "-webtransport-server"},
		{"bad hash", []string{"-webtransport-server", "192.0.2.1:443", "-webtransport-cert-hash", "abcd"}, 2, "-webtransport-cert-hash \"abcd\": want a SHA-256, 64 hex digits"},
		{"missing hash file", []string{"-webtransport-server", "192.0.2.1:443", "-webtransport-cert-hash-file", "/nonexistent/h"}, 1, "-webtransport-cert-hash-file"},
		{"bad hash file", []string{"-webtransport-server", "192.0.2.1:443", "-webtransport-cert-hash-file", writeFile(t, "h", "xyz\n")}, 1, "line 1: want a SHA-256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCmd(t, keyVars, "", append(ok, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tc.code, tc.want)
			}
		})
	}
}

// TestHashFileReread: the hash file is read again when it changes, at
// most once per recheck interval; a broken rewrite keeps the last hashes.
func TestHashFileReread(t *testing.T) {
	path := writeFile(t, "hashes", "# server 1\n"+hashA+"\n")
	now := time.Unix(1000, 0)
	f := &hashFile{path: path, log: slog.New(slog.DiscardHandler), now: func() time.Time { return now }}
	if err := f.load(); err != nil {
		t.Fatal(err)
	}
	check := func(want ...string) {
		t.Helper()
		got := f.get()
		if len(got) != len(want) {
			t.Fatalf("%d hashes; want %d", len(got), len(want))
		}
		for i := range want {
			h, _ := parseHash(want[i])
			if got[i] != h {
				t.Fatalf("hash %d: %x; want %s", i, got[i], want[i])
			}
		}
	}
	check(hashA)
	write := func(content string, mod time.Time) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(path, mod, mod)
	}
	write(hashB+"\n"+hashA+"\n", time.Unix(2000, 0))
	check(hashA) // not looked at again within the interval
	now = now.Add(hashRecheck)
	check(hashB, hashA)
	write("not a hash\n", time.Unix(3000, 0))
	now = now.Add(hashRecheck)
	check(hashB, hashA) // kept
	write(hashA+"\n", time.Unix(4000, 0))
	now = now.Add(hashRecheck)
	check(hashA)
}

// TestServeWebTransport: serve answers transport=webtransport with the
// WebTransport servers and the hashes of -webtransport-cert-hash and
// -webtransport-cert-hash-file, and plain requests as before.
func TestServeWebTransport(t *testing.T) {
	hashPath := writeFile(t, "hash", hashB+"\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut lockedBuffer
	e := &env{ctx: ctx, getenv: func(k string) string { return keyVars[k] }, stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, now: time.Now}
	args := []string{"serve", "-listen", "127.0.0.1:0", "-protocol", "1122", "-auth", "dev", "-servers", "192.0.2.1:40000",
		"-webtransport-server", "192.0.2.1:443", "-webtransport-server", "[2001:db8::1]:443",
		"-webtransport-cert-hash", hashA, "-webtransport-cert-hash-file", hashPath}
	exit := make(chan int, 1)
	go func() { exit <- run(e, args) }()
	base := "http://" + waitListening(t, &errOut, exit)

	get := func(query string) (backend.TokenResponse, string) {
		t.Helper()
		resp, err := http.Post(base+"/token?"+query, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var tr backend.TokenResponse
		if resp.StatusCode != 200 || json.Unmarshal(body, &tr) != nil {
			t.Fatalf("POST /token?%s: %d %s", query, resp.StatusCode, body)
		}
		return tr, string(body)
	}
	tr, _ := get("client_id=5&transport=webtransport")
	if strings.Join(tr.Servers, ",") != "192.0.2.1:443,[2001:db8::1]:443" || strings.Join(tr.CertificateHashes, ",") != hashA+","+hashB {
		t.Fatalf("webtransport token: servers %v, hashes %v", tr.Servers, tr.CertificateHashes)
	}
	in := inspectJSON(t, keyVars, tr.ConnectToken)
	if in.Private == nil || in.Private.ClientID != "5" {
		t.Fatalf("token's private part: %+v", in.Private)
	}
	tr, body := get("client_id=6")
	if strings.Join(tr.Servers, ",") != "192.0.2.1:40000" || strings.Contains(body, "certificate_hashes") {
		t.Fatalf("UDP token: %s", body)
	}
	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/reliable"
)

// TestTokenEndpoint: the backend's /api/token answers a POST with a token
// for the WebTransport address and the hash of the certificate the server
// presents, a new client id each time, and refuses other methods.
func TestTokenEndpoint(t *testing.T) {
	dist := t.TempDir()
	writeFakeDist(t, dist)
	loop := netip.MustParseAddrPort("127.0.0.1:0")
	d, err := start(context.Background(), config{HTTP: loop, UDP: loop, WebTransport: loop, Dist: dist})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	ids := map[string]bool{}
	for range 2 {
		res, err := http.Post(d.URL()+"api/token", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			ConnectToken      string   `json:"connect_token"`
			ClientID          string   `json:"client_id"`
			Servers           []string `json:"servers"`
			CertificateHashes []string `json:"certificate_hashes"`
		}
		err = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("POST /api/token: %d, %v", res.StatusCode, err)
		}
		if want := d.wt.LocalAddr().String(); len(body.Servers) != 1 || body.Servers[0] != want {
			t.Errorf("servers %v; want [%s], the WebTransport address", body.Servers, want)
		}
		h := d.wt.CertificateHash()
		if len(body.CertificateHashes) != 1 || body.CertificateHashes[0] != hex.EncodeToString(h[:]) {
			t.Errorf("certificate_hashes %v; want [%x]", body.CertificateHashes, h)
		}
		raw, err := base64.StdEncoding.DecodeString(body.ConnectToken)
		var tok codec.ConnectToken
		if err != nil || codec.ReadConnectToken(raw, &tok) != nil {
			t.Fatalf("connect_token does not decode: %v", err)
		}
		if ids[body.ClientID] {
			t.Errorf("client id %s handed out twice", body.ClientID)
		}
		ids[body.ClientID] = true
	}

	res, err := http.Get(d.URL() + "api/token")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/token: %d; want 405", res.StatusCode)
	}
	res, err = http.Get(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	page.ReadFrom(res.Body)
	res.Body.Close()
	if !strings.Contains(page.String(), `from "./netcode.js"`) {
		t.Errorf("GET /: the page does not import netcode.js")
	}
	res, err = http.Get(d.URL() + "netcode.wasm")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "application/wasm" {
		t.Errorf("netcode.wasm served as %q; want application/wasm (instantiateStreaming needs it)", ct)
	}
}

// TestFlags: bad flags and arguments are usage errors (status 2) and
// nothing is started.
func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"-http", "nowhere"}, {"-webtransport", "1.2.3.4"}, {"extra"}, {"-log-level", "loud"}} {
		var out, errs bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		code := run(ctx, args, func(string) string { return "" }, &out, &errs)
		cancel()
		if code != 2 || !strings.Contains(errs.String(), "netcode-webdemo") {
			t.Errorf("run %q: status %d, stderr %q; want 2 and a usage error", args, code, errs.String())
		}
	}
}

// writeFakeDist writes placeholder client files: the tests that do not
// run a browser need them served, not built.
func writeFakeDist(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{"netcode.wasm", "netcode.js", "wasm_exec.js"} {
		if err := writeFile(dir, f, []byte("placeholder")); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(dir, name string, b []byte) error {
	return os.WriteFile(filepath.Join(dir, name), b, 0o644)
}

// TestNativePlayer: a UDP player with a token from the demo's token
// service (no transport: UDP) plays the same echo game as the browsers.
func TestNativePlayer(t *testing.T) {
	dist := t.TempDir()
	writeFakeDist(t, dist)
	loop := netip.MustParseAddrPort("127.0.0.1:0")
	d, err := start(context.Background(), config{HTTP: loop, UDP: loop, WebTransport: loop, Dist: dist})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	res, err := http.Post("http://"+d.tokenLn.Addr().String()+"/?client_id=7", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		ConnectToken string   `json:"connect_token"`
		Servers      []string `json:"servers"`
	}
	err = json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if err != nil || len(body.Servers) != 1 || body.Servers[0] != d.udp.LocalAddr().String() {
		t.Fatalf("UDP token: servers %v, %v; want [%v]", body.Servers, err, d.udp.LocalAddr())
	}
	token, err := base64.StdEncoding.DecodeString(body.ConnectToken)
	if err != nil {
		t.Fatal(err)
	}
	rc := reliable.DefaultConfig()
	c, err := engine.DialClient(engine.ClientConfig{Reliable: &rc})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Connect(token, time.Now()); err != nil {
		t.Fatal(err)
	}
	payload, buf := []byte("hello from UDP"), make([]byte, rc.MaxPacketSize)
	sent := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		c.Update(time.Now())
		if c.State() == engine.Connected && !sent {
			if err := c.SendPacket(payload); err != nil {
				t.Fatal(err)
			}
			c.Flush()
			sent = true
		}
		if n, _, ok := c.ReceivePacket(buf); ok {
			if !bytes.Equal(buf[:n], payload) {
				t.Fatalf("echo %q; want %q", buf[:n], payload)
			}
			return
		}
		c.Wait(time.Now().Add(20 * time.Millisecond))
	}
	t.Fatalf("no echo over UDP within 5 s (client state %v)", c.State())
}

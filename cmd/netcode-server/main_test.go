package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/cmd/internal/cli"
)

// syncBuf is a goroutine-safe log sink.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func newKeyHex(t *testing.T) string {
	k := make([]byte, 32)
	rand.Read(k)
	return hex.EncodeToString(k)
}

// TestFlagsFromEnvironment: every flag has its variable; the command line
// wins; repeatable flags take comma lists; a bad value names its variable.
func TestFlagsFromEnvironment(t *testing.T) {
	env := map[string]string{
		"NETCODE_BIND": "127.0.0.1:1000,[::1]:1000", "NETCODE_PUBLIC": "203.0.113.1:1000",
		"NETCODE_PROTOCOL": "abc", "NETCODE_KEY_FILE": "/k", "NETCODE_MAX_CLIENTS": "7", "NETCODE_SHARDS": "3",
		"NETCODE_HTTP": "127.0.0.1:9", "NETCODE_DRAIN_GRACE": "5s", "NETCODE_TOKEN_LIFETIME": "60s",
		"NETCODE_AGONES": "true", "NETCODE_AGONES_TRACKING": "list", "NETCODE_AGONES_PORT": "game",
		"NETCODE_GAME": "relay", "NETCODE_TICK": "60", "NETCODE_LOG_FORMAT": "json", "NETCODE_LOG_LEVEL": "debug",
		"NETCODE_GAME_STALL":   "2s",
		"NETCODE_SOURCE_LIMIT": "try", "NETCODE_SOURCE_RATE": "500", "NETCODE_SOURCE_BURST": "50",
		"NETCODE_WEBTRANSPORT": "127.0.0.1:4433", "NETCODE_WEBTRANSPORT_PUBLIC": "203.0.113.1:443",
		"NETCODE_WEBTRANSPORT_CERT": "/c", "NETCODE_WEBTRANSPORT_KEY": "/ck", "NETCODE_WEBTRANSPORT_HASH_FILE": "/h",
		"NETCODE_WEBTRANSPORT_ORIGIN": "https://a.example, https://b.example",
		"NETCODE_XDP":                 "generic", "NETCODE_XDP_IF": "veth0",
	}
	o, err := parseFlags([]string{"-max-clients", "9", "-bind", "127.0.0.2:5"}, envOf(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := []any{o.binds.String(), o.public.String(), o.protocolHex, o.keyFile, o.maxClients, o.shards, o.httpAddr,
		o.drainGrace, o.tokenLifetime, o.agones, o.agonesTracking, o.agonesPort, o.game, o.tick, o.logFormat, o.logLevel,
		o.gameStall, o.sourceLimit, o.sourceRate, o.sourceBurst,
		o.webTransport.String(), o.webTransportPublic.String(), o.webTransportCert, o.webTransportKey, o.webTransportHash,
		strings.Join(o.webTransportOrigin, " "), o.xdp, o.xdpIf}
	want := []any{"127.0.0.2:5", "203.0.113.1:1000", "abc", "/k", 9, 3, "127.0.0.1:9",
		5 * time.Second, 60 * time.Second, true, "list", "game", "relay", 60.0, "json", "debug",
		2 * time.Second, "try", 500, 50,
		"127.0.0.1:4433", "203.0.113.1:443", "/c", "/ck", "/h", "https://a.example https://b.example", "generic", "veth0"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("option %d: %v; want %v", i, got[i], want[i])
		}
	}
	// Every flag is covered by the table above.
	seen := 0
	for name := range env {
		if strings.HasPrefix(name, cli.EnvPrefix) {
			seen++
		}
	}
	if n := countFlags(t); seen != n {
		t.Errorf("the test sets %d variables; the command has %d flags", seen, n)
	}
	if _, err := parseFlags(nil, envOf(map[string]string{"NETCODE_MAX_CLIENTS": "many"}), io.Discard); err == nil ||
		!strings.Contains(err.Error(), "NETCODE_MAX_CLIENTS") {
		t.Errorf("bad variable: %v", err)
	}
	if _, err := parseFlags(nil, envOf(map[string]string{"NETCODE_BIND": "localhost"}), io.Discard); err == nil ||
		!strings.Contains(err.Error(), "NETCODE_BIND") {
		t.Errorf("bad bind variable: %v", err)
	}
}

// countFlags counts the flags the usage lists with a variable (all but
// -version).
func countFlags(t *testing.T) int {
	var out bytes.Buffer
	parseFlags([]string{"-h"}, envOf(nil), &out)
	flags := len(regexp.MustCompile(`(?m)^  -`).FindAllString(out.String(), -1))
	vars := strings.Count(out.String(), "[$NETCODE_")
	if flags != vars+1 {
		t.Errorf("the usage lists %d flags and %d variables; want every flag but -version with one", flags, vars)
	}
	return vars
}

// serve runs the command in process until the returned stop is called,
// and returns its logs once it serves (JSON lines).
func serve(t *testing.T, args []string, env map[string]string) (logs *syncBuf, fields map[string]any, stop func() int) {
	t.Helper()
	logs = new(syncBuf)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	args = append([]string{"-log-format", "json", "-http", "127.0.0.1:0", "-drain-grace", "1s"}, args...)
	go func() { done <- run(ctx, args, envOf(env), io.Discard, logs) }()
	stop = func() int {
		cancel()
		select {
		case code := <-done:
			done <- code
			return code
		case <-time.After(30 * time.Second):
			t.Fatal("the command did not exit within 30 s of the drain")
			return -1
		}
	}
	t.Cleanup(func() { stop() })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for line := range strings.Lines(logs.String()) {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "netcode dedicated server serving" {
				return logs, m, stop
			}
		}
		select {
		case code := <-done:
			t.Fatalf("the command exited %d before serving:\n%s", code, logs)
		default:
		}
	}
	t.Fatalf("the command did not serve within 10 s:\n%s", logs)
	return
}

// TestKeyNeverLogged: the key, from the environment or a file, appears in
// no log line, from start to drain, nor in the usage text or an error.
func TestKeyNeverLogged(t *testing.T) {
	key := newKeyHex(t)
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(what, out string) {
		t.Helper()
		for _, k := range []string{key, strings.ToUpper(key), key[:16]} {
			if strings.Contains(out, k) {
				t.Errorf("%s shows the key:\n%s", what, out)
			}
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"environment", []string{"-protocol", "1", "-bind", "127.0.0.1:0"}, map[string]string{keyEnv: key}},
		{"file", []string{"-protocol", "1", "-bind", "127.0.0.1:0", "-key-file", file}, nil},
		{"file from environment", []string{"-protocol", "1", "-bind", "127.0.0.1:0"}, map[string]string{"NETCODE_KEY_FILE": file}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs, fields, stop := serve(t, append(tc.args, "-log-level", "debug"), tc.env)
			if code := stop(); code != 0 {
				t.Fatalf("exit %d", code)
			}
			check("the logs", logs.String())
			if !strings.Contains(logs.String(), `"key":"`) || fields["udp"] == nil {
				t.Fatalf("no key source or addresses in the logs:\n%s", logs)
			}
		})
	}
	var usage bytes.Buffer
	run(t.Context(), []string{"-h"}, envOf(map[string]string{keyEnv: key}), &usage, &usage)
	check("the usage", usage.String())
	// A malformed key is not quoted back.
	bad := "zz" + key[2:]
	var out syncBuf
	run(t.Context(), []string{"-protocol", "1"}, envOf(map[string]string{keyEnv: bad}), &out, &out)
	if strings.Contains(out.String(), bad[2:20]) || !strings.Contains(out.String(), keyEnv) {
		t.Errorf("a bad key's error: %q", out.String())
	}
}

// TestDevMode: with no key the command serves on loopback with a
// throwaway key in a file only the user can read, which it removes at
// exit; the endpoints answer.
func TestDevMode(t *testing.T) {
	logs, fields, stop := serve(t, []string{"-bind", "127.0.0.1:0"}, nil)
	var path string
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["key_file"] != nil {
			path = m["key_file"].(string)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the development key file %q: %v\n%s", path, err, logs)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v; want 0600", st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil || len(strings.TrimSpace(string(b))) != 64 {
		t.Fatalf("key file: %q %v", b, err)
	}
	if strings.Contains(logs.String(), strings.TrimSpace(string(b))) {
		t.Error("the development key is in the logs")
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get("http://" + fields["http"].(string) + p)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", p, resp, err)
		}
		resp.Body.Close()
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the development key file is still there after exit: %v", err)
	}
}

// TestSourceLimitFlags: -source-limit turns the socket's per-source limit
// on, with the rate and burst given, optional with "try".
func TestSourceLimitFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want batchio.SourceLimit
	}{
		{nil, batchio.SourceLimit{}},
		{[]string{"-source-limit", "on"}, batchio.SourceLimit{Rate: batchio.DefaultSourceRate, Burst: batchio.DefaultSourceBurst}},
		{[]string{"-source-limit", "try", "-source-rate", "300", "-source-burst", "30"}, batchio.SourceLimit{Rate: 300, Burst: 30, Optional: true}},
		{[]string{"-source-rate", "300"}, batchio.SourceLimit{}},
	} {
		o, err := parseFlags(tc.args, envOf(nil), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := socketConfig(o).SourceLimit; got != tc.want {
			t.Errorf("%q: %+v; want %+v", tc.args, got, tc.want)
		}
	}
	if _, err := parseFlags([]string{"-source-limit", "yes"}, envOf(nil), io.Discard); err == nil {
		t.Error("-source-limit yes accepted; want off, on or try")
	}
}

// TestXDPFlags: -xdp and -xdp-if set the socket's AF_XDP path, together
// or not at all.
func TestXDPFlags(t *testing.T) {
	o, err := parseFlags([]string{"-xdp", "native", "-xdp-if", "eth1"}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := socketConfig(o).XDP; !reflect.DeepEqual(got, batchio.XDP{Mode: batchio.XDPNative, Interface: "eth1"}) {
		t.Errorf("-xdp native -xdp-if eth1: %+v", got)
	}
	if o, err = parseFlags(nil, envOf(map[string]string{"NETCODE_XDP": "try", "NETCODE_XDP_IF": "eth2"}), io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := socketConfig(o).XDP; !reflect.DeepEqual(got, batchio.XDP{Mode: batchio.XDPTry, Interface: "eth2"}) {
		t.Errorf("NETCODE_XDP=try NETCODE_XDP_IF=eth2: %+v", got)
	}
	for _, args := range [][]string{{"-xdp", "native"}, {"-xdp-if", "eth1"}, {"-xdp", "fast", "-xdp-if", "eth1"}} {
		if _, err := parseFlags(args, envOf(nil), io.Discard); err == nil {
			t.Errorf("%q accepted; want an error", args)
		}
	}
}

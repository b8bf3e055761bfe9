package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine/backend"
)

func TestServeFlagErrors(t *testing.T) {
	secrets := writeFile(t, "secrets", "7 a-secret-of-16-chars-or-more\n")
	badSecrets := writeFile(t, "bad", "seven a-secret-of-16-chars-or-more\n")
	ok := []string{"-protocol", "1", "-auth", "dev"}
	static := []string{"-servers", "192.0.2.1:40000"}
	args := func(extra ...string) []string { return append([]string{"serve"}, extra...) }
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return args(out...)
	}
	var many []string
	for i := range 33 {
		many = append(many, fmt.Sprintf("192.0.2.%d:40000", i+1))
	}
	tests := []struct {
		name string
		vars map[string]string
		args []string
		code int
		want string
	}{
		{"no protocol", keyVars, join([]string{"-auth", "dev"}, static), 2, "-protocol is required"},
		{"no auth", keyVars, join([]string{"-protocol", "1"}, static), 2, "-auth is required: dev"},
		{"bad auth", keyVars, join([]string{"-protocol", "1", "-auth", "oauth"}, static), 2, `invalid value "oauth" for flag -auth: want dev or bearer`},
		{"dev off loopback", keyVars, join(ok, static, []string{"-listen", "0.0.0.0:8080"}), 2, `-auth dev serves loopback callers only: -listen "0.0.0.0:8080" must be a loopback address`},
		{"bearer without secrets", keyVars, join([]string{"-protocol", "1", "-auth", "bearer"}, static), 2, "-auth bearer needs -secrets-file"},
		{"dev with secrets", keyVars, join(ok, static, []string{"-secrets-file", secrets}), 2, "-secrets-file goes with -auth bearer"},
		{"bad secrets file", keyVars, join([]string{"-protocol", "1", "-auth", "bearer", "-secrets-file", badSecrets}, static), 1, "secrets line 1: client id is not a decimal number"},
		{"no directory", keyVars, join(ok), 2, "give one of -servers, -health-servers and -agones-url (0 given)"},
		{"two directories", keyVars, join(ok, static, []string{"-agones-url", "https://x"}), 2, "(2 given)"},
		{"bad server", keyVars, join(ok, []string{"-servers", "192.0.2.1:40000,nowhere"}), 2, `-servers, server 2: "nowhere": want IPv4:port or [IPv6]:port`},
		{"bad internal", keyVars, join(ok, []string{"-servers", "192.0.2.1:40000/10.0.0.1"}), 2, "internal address"},
		{"33 servers", keyVars, join(ok, []string{"-servers", strings.Join(many, ",")}), 2, "-servers: 33 servers; allowed 1 to 32"},
		{"health entry", keyVars, join(ok, []string{"-health-servers", "http://10.0.0.1:9090"}), 2, "want URL=PUBLIC[/INTERNAL]"},
		{"health URL", keyVars, join(ok, []string{"-health-servers", "ftp://x=192.0.2.1:1"}), 2, `URL "ftp://x"`},
		{"agones namespace", keyVars, join(ok, []string{"-agones-url", "https://x", "-agones-namespace", ""}), 2, "Namespace is empty"},
		{"agones cert alone", keyVars, join(ok, []string{"-agones-url", "https://x", "-agones-cert", "c.pem"}), 2, "-agones-cert and -agones-key go together"},
		{"agones selector", keyVars, join(ok, []string{"-agones-url", "https://x", "-agones-selector", "fleet"}), 2, `"fleet": want label=value`},
		{"lifetime 0", keyVars, join(ok, static, []string{"-lifetime", "0"}), 2, `invalid value "0" for flag -lifetime: want an integer from 1 to 86400`},
		{"lifetime too long", keyVars, join(ok, static, []string{"-lifetime", "86401"}), 2, `"86401" for flag -lifetime`},
		{"timeout 0", keyVars, join(ok, static, []string{"-timeout", "0"}), 2, `invalid value "0" for flag -timeout: want an integer from 1 to 86400, or -1`},
		{"rate 0", keyVars, join(ok, static, []string{"-rate", "0"}), 2, `invalid value "0" for flag -rate: want a number above 0 up to 1000000`},
		{"burst 0", keyVars, join(ok, static, []string{"-burst", "0"}), 2, `invalid value "0" for flag -burst: want an integer from 1 to 1048576`},
		{"tls cert alone", keyVars, join(ok, static, []string{"-tls-cert", "c.pem"}), 2, "-tls-cert and -tls-key go together"},
		{"no key", nil, join(ok, static), 2, "no private key"},
		{"short key", map[string]string{keyEnv: "abcd"}, join(ok, static), 2, "NETCODE_PRIVATE_KEY: 4 hex digits; want 64"},
		{"listen bad", keyVars, join(ok, static, []string{"-listen", "127.0.0.1:99999"}), 2, `invalid value "127.0.0.1:99999" for flag -listen: want host:port`},
		{"extra argument", keyVars, join(ok, static, []string{"now"}), 2, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, tt.vars, "", tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tt.code, tt.want)
			}
		})
	}
}

// serve answers on loopback with the chosen auth, logs no key, and stops
// when its context is cancelled.
func TestServeRuns(t *testing.T) {
	secrets := writeFile(t, "secrets", "7 a-secret-of-16-chars-or-more\n")
	tests := []struct {
		name     string
		args     []string
		prepare  func(*http.Request)
		clientID string
	}{
		{"bearer", []string{"-auth", "bearer", "-secrets-file", secrets}, func(r *http.Request) { r.Header.Set("Authorization", "Bearer a-secret-of-16-chars-or-more") }, "7"},
		{"dev", []string{"-auth", "dev"}, func(r *http.Request) { r.URL.RawQuery = "client_id=99" }, "99"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out, errOut lockedBuffer
			e := &env{ctx: ctx, getenv: func(k string) string { return keyVars[k] }, stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, now: time.Now}
			args := append([]string{"serve", "-listen", "127.0.0.1:0", "-protocol", "1122", "-servers", "192.0.2.1:40000,[2001:db8::1]:40000"}, tt.args...)
			exit := make(chan int, 1)
			go func() { exit <- run(e, args) }()

			addr := waitListening(t, &errOut, exit)
			base := "http://" + addr
			req, _ := http.NewRequest(http.MethodPost, base+"/token", nil)
			tt.prepare(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var tr backend.TokenResponse
			json.NewDecoder(resp.Body).Decode(&tr)
			resp.Body.Close()
			if resp.StatusCode != 200 || tr.ClientID != tt.clientID || len(tr.Servers) != 2 || tr.ExpireSeconds != 30 {
				t.Fatalf("POST /token: %d %+v", resp.StatusCode, tr)
			}
			in := inspectJSON(t, keyVars, tr.ConnectToken)
			if in.Private == nil || in.Private.ClientID != tt.clientID {
				t.Errorf("token's private part: %+v", in.Private)
			}
			resp, err = http.Post(base+"/token", "application/json", nil) // no credentials
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode/100 != 4 {
				t.Errorf("no credentials: status %d; want 4xx", resp.StatusCode)
			}
			if resp, err := http.Get(base + "/healthz"); err != nil || resp.StatusCode != 200 {
				t.Errorf("GET /healthz: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}
			cancel()
			select {
			case code := <-exit:
				if code != 0 {
					t.Errorf("exit %d after cancel: %s", code, errOut.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("serve did not stop within 10 s of its context ending")
			}
			logs := errOut.String()
			if !strings.Contains(logs, "connect token issued") || !strings.Contains(logs, `"private_key":"[redacted]"`) {
				t.Errorf("logs lack the issue record or the redacted config:\n%s", logs)
			}
			if strings.Contains(logs, testKeyHex) || strings.Contains(logs, tr.ConnectToken[:40]) || strings.Contains(logs, "a-secret-of-16") {
				t.Errorf("the key, a token or a secret is in the logs:\n%s", logs)
			}
		})
	}
}

// waitListening reads serve's log until it names its address.
func waitListening(t *testing.T, logs *lockedBuffer, exit <-chan int) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for line := range strings.SplitSeq(logs.String(), "\n") {
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				return rec.Addr
			}
		}
		select {
		case code := <-exit:
			t.Fatalf("serve exited %d: %s", code, logs.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not log its address within 10 s: %s", logs.String())
	return ""
}

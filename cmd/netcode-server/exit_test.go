package main

import (
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/cmd/internal/cli"
)

// exitCase is one command line and what it must do.
type exitCase struct {
	args []string
	env  map[string]string
	want string // in the output (stdout for 0, stderr otherwise)
}

// runCase runs a case in process and returns the status and output.
func runCase(t *testing.T, tc exitCase) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut syncBuf
	code = run(t.Context(), tc.args, envOf(tc.env), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestExitOK: -h and -version print to stdout, nothing to stderr, and
// exit 0, whatever else is wrong.
func TestExitOK(t *testing.T) {
	b := cli.Build()
	for _, tc := range []exitCase{
		{args: []string{"-h"}, want: "usage: netcode-server [flags]"},
		{args: []string{"-help"}, want: "[$NETCODE_MAX_CLIENTS]"},
		{args: []string{"-h"}, env: map[string]string{"NETCODE_MAX_CLIENTS": "0"}, want: "-max-clients N"},
		{args: []string{"-version"}, want: "netcode-server " + b.Version + " revision " + b.Revision + " " + runtime.Version() + "\n"},
		{args: []string{"-version", "-tick", "1"}, env: map[string]string{"NETCODE_TICK": "-5"}, want: "revision"},
	} {
		code, stdout, stderr := runCase(t, tc)
		if code != 0 || !strings.Contains(stdout, tc.want) || stderr != "" {
			t.Errorf("%v %v: exit %d, stdout %q, stderr %q; want 0 and %q on stdout only", tc.args, tc.env, code, stdout, stderr, tc.want)
		}
	}
}

// TestExitUsage: every bad flag or variable exits 2 before anything
// listens, naming the flag or the variable and what is allowed, once,
// never a Go field name and never the whole usage.
func TestExitUsage(t *testing.T) {
	key := newKeyHex(t)
	withKey := map[string]string{keyEnv: key}
	for _, tc := range []exitCase{
		{args: []string{"-max-clients", "100000"}, want: `invalid value "100000" for flag -max-clients: want an integer from 1 to 65536`},
		{args: []string{"-max-clients", "0"}, want: "-max-clients: want an integer from 1 to 65536"},
		{args: []string{"-tick", "-5"}, want: "-tick: want a number above 0 up to 1000"},
		{args: []string{"-tick", "0"}, want: "-tick: want a number above 0 up to 1000"},
		{args: []string{"-tick", "NaN"}, want: "-tick: want a number above 0 up to 1000"},
		{args: []string{"-drain-grace", "-1s"}, want: "-drain-grace: want a duration from 1ms to 1h0m0s"},
		{args: []string{"-drain-grace", "0s"}, want: "-drain-grace: want a duration from 1ms"},
		{args: []string{"-game-stall", "5ms"}, want: "-game-stall: want a duration from 10ms to 10m0s"},
		{args: []string{"-token-lifetime", "1500ms"}, want: "-token-lifetime: want whole seconds from 1s to 24h0m0s"},
		{args: []string{"-token-lifetime", "0s"}, want: "-token-lifetime: want whole seconds"},
		{args: []string{"-shards", "300"}, want: "-shards: want an integer from 0 to 256"},
		{args: []string{"-shards", "-1"}, want: "-shards: want an integer from 0 to 256"},
		{args: []string{"-http", "nonsense"}, want: "-http: want host:port such as 127.0.0.1:8080 (port 0: any), or off"},
		{args: []string{"-http", "127.0.0.1:http"}, want: "-http: want host:port"},
		{args: []string{"-game", "chess"}, want: "-game: want echo or relay"},
		{args: []string{"-protocol", "xyz"}, want: "-protocol: want 1 to 16 hex digits"},
		{args: []string{"-log-format", "xml"}, want: "-log-format: want json or text"},
		{args: []string{"-log-level", "loud"}, want: "-log-level: want debug, info, warn or error"},
		{args: []string{"-agones-tracking", "sometimes"}, want: "want counter, list, players or none"},
		{args: []string{"-bind", "localhost"}, want: `-bind: "localhost": want IPv4:port or [IPv6]:port`},
		{args: []string{"-agones=maybe"}, want: "-agones"},
		{args: []string{"-nope"}, want: "flag provided but not defined: -nope"},
		{args: []string{"stray"}, want: "unexpected arguments"},
		{env: map[string]string{"NETCODE_MAX_CLIENTS": "100000"}, want: `NETCODE_MAX_CLIENTS="100000": want an integer from 1 to 65536`},
		{env: map[string]string{"NETCODE_MAX_CLIENTS": "many"}, want: `NETCODE_MAX_CLIENTS="many": want an integer`},
		{env: map[string]string{"NETCODE_TICK": "0"}, want: `NETCODE_TICK="0": want a number above 0`},
		{env: map[string]string{"NETCODE_DRAIN_GRACE": "-1s"}, want: `NETCODE_DRAIN_GRACE="-1s": want a duration`},
		{env: map[string]string{"NETCODE_TOKEN_LIFETIME": "1500ms"}, want: `NETCODE_TOKEN_LIFETIME="1500ms": want whole seconds`},
		{env: map[string]string{"NETCODE_SHARDS": "300"}, want: `NETCODE_SHARDS="300": want an integer from 0 to 256`},
		{env: map[string]string{"NETCODE_HTTP": "nonsense"}, want: `NETCODE_HTTP="nonsense": want host:port`},
		{env: map[string]string{"NETCODE_AGONES": "yes"}, want: `NETCODE_AGONES="yes"`},
		{env: map[string]string{"NETCODE_BIND": "localhost"}, want: `NETCODE_BIND="localhost"`},
		{args: []string{"-bind", "0.0.0.0:0"}, want: "loopback addresses only"},
		{args: []string{"-agones"}, want: "-agones needs the private key"},
		{env: withKey, want: "-protocol is required"},
		{args: []string{"-protocol", "1"}, env: withKey, want: "-public is required with -bind 0.0.0.0:40000"},
		{args: []string{"-protocol", "1"}, env: map[string]string{keyEnv: "0123"}, want: "NETCODE_PRIVATE_KEY: not 64 hex digits"},
	} {
		code, stdout, stderr := runCase(t, tc)
		if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v %v: exit %d, stderr %q; want 2 and %q", tc.args, tc.env, code, stderr, tc.want)
			continue
		}
		if stdout != "" || strings.Count(stderr, "\n") != 2 || strings.Contains(stderr, "usage:") {
			t.Errorf("%v %v: stdout %q, stderr %q; want the error once and a hint, on stderr", tc.args, tc.env, stdout, stderr)
		}
		for _, field := range []string{"Config.", "MaxClients", "TickRate", "DrainGrace", "HTTPAddr", "parse error"} {
			if strings.Contains(stderr, field) {
				t.Errorf("%v %v: %q names %q", tc.args, tc.env, stderr, field)
			}
		}
	}
}

// TestExitFailure: a server that cannot start for a reason outside its
// command line exits 1: an unreadable or malformed key file, a UDP address
// another server serves, an HTTP address in use.
func TestExitFailure(t *testing.T) {
	dir := t.TempDir()
	badKey := filepath.Join(dir, "bad")
	if err := os.WriteFile(badKey, []byte("0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Another "server": a group of two sockets on a loopback port.
	group, err := batchio.ListenGroup(netip.MustParseAddrPort("127.0.0.1:0"), 2, batchio.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range group {
			c.Close()
		}
	}()
	served := group[0].LocalAddr().String()
	_, fields, _ := serve(t, []string{"-bind", "127.0.0.1:0"}, nil)
	httpInUse := fields["http"].(string)
	for _, tc := range []exitCase{
		{args: []string{"-protocol", "1", "-key-file", filepath.Join(dir, "none")}, want: "-key-file: open"},
		{args: []string{"-protocol", "1", "-key-file", badKey}, want: "-key-file " + badKey + ": not 64 hex digits"},
		{args: []string{"-bind", served, "-shards", "2", "-http", "off"}, want: served},
		{args: []string{"-bind", served, "-shards", "1", "-http", "off"}, want: served},
		{args: []string{"-bind", "127.0.0.1:0", "-http", httpInUse}, want: httpInUse},
	} {
		code, _, stderr := runCase(t, tc)
		if code != cli.ExitFailure || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

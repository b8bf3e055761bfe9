package main

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/cmd/internal/cli"
)

// exitCase is one command line and what it must print.
type exitCase struct {
	args []string
	vars map[string]string
	want string
}

// withVars returns keyVars plus more variables.
func withVars(more ...string) map[string]string {
	m := map[string]string{}
	for k, v := range keyVars {
		m[k] = v
	}
	for i := 0; i+1 < len(more); i += 2 {
		m[more[i]] = more[i+1]
	}
	return m
}

// TestExitOK: -h and -version on every command print to stdout only and
// exit 0.
func TestExitOK(t *testing.T) {
	b := cli.Build()
	version := "netcode-token " + b.Version + " revision " + b.Revision + " " + runtime.Version() + "\n"
	cases := []exitCase{
		{args: []string{"-version"}, want: version},
		{args: []string{"-h"}, want: "commands:"},
	}
	for _, cmd := range []string{"keygen", "mint", "inspect", "serve"} {
		cases = append(cases,
			exitCase{args: []string{cmd, "-version"}, want: version},
			exitCase{args: []string{cmd, "-h"}, want: "usage: netcode-token " + cmd},
			exitCase{args: []string{cmd, "-h"}, vars: map[string]string{"NETCODE_LIFETIME": "0"}, want: "-version\n"})
	}
	cases = append(cases, exitCase{args: []string{"serve", "-h"}, want: "-log-level debug|info|warn|error\n    \tlog level: debug, info, warn or error (default info) [$NETCODE_LOG_LEVEL]"})
	for _, tc := range cases {
		r := runCmd(t, tc.vars, "", tc.args...)
		if r.code != 0 || !strings.Contains(r.stdout, tc.want) || r.stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and %q on stdout only", tc.args, r.code, r.stdout, r.stderr, tc.want)
		}
	}
}

// TestExitUsage: a bad flag, variable or argument of any command exits 2,
// naming the flag or the variable and what is allowed, once.
func TestExitUsage(t *testing.T) {
	serve := []string{"serve", "-protocol", "1", "-auth", "dev", "-servers", "192.0.2.1:40000"}
	mint := []string{"mint", "-protocol", "1", "-client-id", "1", "-addr", "192.0.2.1:40000"}
	with := func(base []string, extra ...string) []string { return append(append([]string(nil), base...), extra...) }
	for _, tc := range []exitCase{
		{args: []string{"bake"}, want: `unknown command "bake"`},
		{args: []string{"keygen", "extra"}, want: "unexpected arguments"},
		{args: []string{"keygen", "-nope"}, want: "flag provided but not defined: -nope"},
		{args: []string{"inspect", "-json=maybe"}, want: `invalid boolean value "maybe" for -json: want true or false`},
		{args: []string{"inspect", "a", "b"}, want: "2 arguments"},
		{args: []string{"inspect"}, vars: withVars("NETCODE_SHOW_KEYS", "sometimes"), want: `NETCODE_SHOW_KEYS="sometimes": want true or false`},
		{args: with(mint, "-expire", "0"), want: "-expire: want an integer from 1 to 2147483647, or -1"},
		{args: with(mint, "-timeout", "-5"), want: "-timeout: want an integer from 1 to 2147483647, or -1"},
		{args: mint, vars: withVars("NETCODE_EXPIRE", "soon"), want: `NETCODE_EXPIRE="soon": want an integer`},
		{args: []string{"mint", "-protocol", "1", "-addr", "192.0.2.1:1"}, vars: withVars("NETCODE_CLIENT_ID", "-1"), want: `NETCODE_CLIENT_ID="-1": want a decimal number`},
		{args: []string{"mint", "-client-id", "1", "-addr", "192.0.2.1:1"}, vars: withVars("NETCODE_PROTOCOL", "xyz"), want: `NETCODE_PROTOCOL="xyz": want 1 to 16 hex digits`},
		{args: with(serve, "-lifetime", "0"), want: "-lifetime: want an integer from 1 to 86400"},
		{args: with(serve, "-lifetime", "1500ms"), want: "-lifetime: want an integer from 1 to 86400"},
		{args: with(serve, "-timeout", "0"), want: "-timeout: want an integer from 1 to 86400, or -1"},
		{args: with(serve, "-rate", "-1"), want: "-rate: want a number above 0 up to 1000000"},
		{args: with(serve, "-burst", "0"), want: "-burst: want an integer from 1 to 1048576"},
		{args: with(serve, "-listen", "nonsense"), want: "-listen: want host:port"},
		{args: with(serve, "-log-format", "xml"), want: "-log-format: want json or text"},
		{args: with(serve, "-log-level", "loud"), want: "-log-level: want debug, info, warn or error"},
		{args: with(serve, "-auth", "oauth"), want: "-auth: want dev or bearer"},
		{args: serve, vars: withVars("NETCODE_LIFETIME", "0"), want: `NETCODE_LIFETIME="0": want an integer from 1 to 86400`},
		{args: serve, vars: withVars("NETCODE_RATE", "fast"), want: `NETCODE_RATE="fast": want a number above 0`},
		{args: serve, vars: withVars("NETCODE_LISTEN", "nonsense"), want: `NETCODE_LISTEN="nonsense": want host:port`},
		{args: serve, vars: withVars("NETCODE_LOG_LEVEL", "loud"), want: `NETCODE_LOG_LEVEL="loud": want debug, info, warn or error`},
		{args: []string{"serve", "-protocol", "1", "-servers", "192.0.2.1:40000"}, want: "-auth is required"},
		{args: with(serve, "stray"), want: "unexpected arguments"},
	} {
		r := runCmd(t, tc.vars, "", tc.args...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q %v: exit %d, stderr %q; want 2 and %q", tc.args, tc.vars, r.code, r.stderr, tc.want)
			continue
		}
		if r.stdout != "" || strings.Count(r.stderr, "\n") != 2 || strings.Contains(r.stderr, "usage:") || strings.Contains(r.stderr, "parse error") {
			t.Errorf("%q: stdout %q, stderr %q; want the error once and a hint, on stderr", tc.args, r.stdout, r.stderr)
		}
	}
}

// TestExitFailure: a command that ran and failed exits 1: files that are
// missing or exist when they must not, a bad token, a listen address in
// use.
func TestExitFailure(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	existing := writeFile(t, "key", testKeyHex+"\n")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	serve := []string{"serve", "-protocol", "1", "-servers", "192.0.2.1:40000"}
	for _, tc := range []exitCase{
		{args: []string{"keygen", "-o", existing}, want: "exists"},
		{args: []string{"mint", "-protocol", "1", "-client-id", "1", "-addr", "192.0.2.1:1", "-key-file", missing}, want: "-key-file: open"},
		{args: []string{"inspect", "not-a-token"}, want: "netcode-token inspect: "},
		{args: append(serve, "-auth", "bearer", "-secrets-file", missing), vars: keyVars, want: "-secrets-file"},
		{args: append(serve, "-auth", "dev", "-listen", busy.Addr().String()), vars: keyVars, want: "address already in use"},
	} {
		r := runCmd(t, tc.vars, "", tc.args...)
		if r.code != cli.ExitFailure || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 1 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// TestServeLogFlags: serve takes the server's -log-format and -log-level
// (and their variables), and its first log line names the build.
func TestServeLogFlags(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut lockedBuffer
	vars := withVars("NETCODE_LOG_LEVEL", "warn")
	e := &env{ctx: ctx, getenv: func(k string) string { return vars[k] }, stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, now: time.Now}
	args := []string{"serve", "-listen", "127.0.0.1:0", "-protocol", "1", "-auth", "dev", "-servers", "192.0.2.1:40000", "-log-format", "text"}
	if r := run(e, append(args, "-log-level", "loud")); r != 2 {
		t.Fatalf("-log-level loud: exit %d", r)
	}
	errOut = lockedBuffer{}
	exit := make(chan int, 1)
	go func() { exit <- run(e, args) }()
	// At warn, nothing is logged while it serves; stop it and check.
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if logs := errOut.String(); strings.Contains(logs, "level=INFO") || strings.Contains(logs, "{") {
		t.Errorf("at NETCODE_LOG_LEVEL=warn in text: %q", logs)
	}
	// At info in JSON, the first line is the start with the build.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	errOut = lockedBuffer{}
	e = &env{ctx: ctx, getenv: func(k string) string { return keyVars[k] }, stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, now: time.Now}
	exit = make(chan int, 1)
	go func() { exit <- run(e, args[:len(args)-2]) }()
	waitListening(t, &errOut, exit)
	cancel()
	<-exit
	first, _, _ := strings.Cut(errOut.String(), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(first), &rec); err != nil {
		t.Fatalf("first line %q: %v", first, err)
	}
	b := cli.Build()
	if rec["msg"] != "netcode-token serve starting" || rec["version"] != b.Version || rec["revision"] != b.Revision || rec["go"] != b.GoVersion {
		t.Errorf("first line %v; want the start with version %q, revision %q, go %q", rec, b.Version, b.Revision, b.GoVersion)
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testNow is the fixed clock of every in-process run.
var testNow = time.Unix(1_800_000_000, 0)

const testKeyHex = "9bdb89c8a59029cbec2dad420fd4acca0c5832fdcc17ed54fc41d49b483e308c"

type result struct {
	code           int
	stdout, stderr string
}

// lockedBuffer lets serve's goroutines write while a test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runCmd runs a command line in-process with the given environment and
// stdin.
func runCmd(t *testing.T, vars map[string]string, stdin string, args ...string) result {
	t.Helper()
	return runCtx(context.Background(), vars, stdin, args...)
}

func runCtx(ctx context.Context, vars map[string]string, stdin string, args ...string) result {
	var out, errOut lockedBuffer
	e := &env{
		ctx:    ctx,
		getenv: func(k string) string { return vars[k] },
		stdin:  strings.NewReader(stdin),
		stdout: &out,
		stderr: &errOut,
		now:    func() time.Time { return testNow },
	}
	code := run(e, args)
	return result{code, out.String(), errOut.String()}
}

// writeFile writes a file in the test's directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: netcode-token COMMAND"},
		{[]string{"bake"}, 2, `unknown command "bake"; want keygen, mint, inspect or serve`},
		{[]string{"help"}, 0, "commands:"},
		{[]string{"mint", "-h"}, 0, "-client-id"},
		{[]string{"mint", "-nope"}, 2, "flag provided but not defined: -nope"},
	} {
		r := runCmd(t, nil, "", tt.args...)
		if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.want) {
			t.Errorf("%q: exit %d, output %q; want %d and %q", tt.args, r.code, r.stdout+r.stderr, tt.code, tt.want)
		}
	}
}

func TestKeygen(t *testing.T) {
	a, b := runCmd(t, nil, "", "keygen"), runCmd(t, nil, "", "keygen")
	for _, r := range []result{a, b} {
		if _, err := parseKey(r.stdout); r.code != 0 || err != nil || len(r.stdout) != 65 {
			t.Fatalf("keygen: exit %d, %q, %v; want 64 hex digits and a newline", r.code, r.stdout, err)
		}
	}
	if a.stdout == b.stdout {
		t.Error("two keygen runs gave the same key")
	}
	path := filepath.Join(t.TempDir(), "key")
	if r := runCmd(t, nil, "", "keygen", "-o", path); r.code != 0 || r.stdout != "" {
		t.Fatalf("keygen -o: exit %d, stdout %q", r.code, r.stdout)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v; want 0600", err, st.Mode())
	}
	if r := runCmd(t, nil, "", "keygen", "-o", path); r.code != 1 || !strings.Contains(r.stderr, "exists") {
		t.Errorf("keygen -o over an existing file: exit %d, %q; want a refusal", r.code, r.stderr)
	}
	if r := runCmd(t, nil, "", "keygen", "extra"); r.code != 2 {
		t.Errorf("keygen extra: exit %d; want 2", r.code)
	}
}

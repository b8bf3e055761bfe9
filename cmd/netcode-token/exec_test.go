package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The built binary: keygen, mint and inspect chained through files and
// pipes, and its exit statuses.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "netcode-token")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	keyFile := filepath.Join(dir, "key")
	runBin := func(stdin string, args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{} // no NETCODE_PRIVATE_KEY from the caller
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), code
	}
	if _, stderr, code := runBin("", "keygen", "-o", keyFile); code != 0 {
		t.Fatalf("keygen: %d %s", code, stderr)
	}
	token, stderr, code := runBin("", "mint", "-protocol", "abc", "-key-file", keyFile, "-client-id", "5", "-addr", "127.0.0.1:40000")
	if code != 0 {
		t.Fatalf("mint: %d %s", code, stderr)
	}
	out, stderr, code := runBin(token, "inspect", "-key-file", keyFile)
	if code != 0 || !strings.Contains(out, "client id        5") || !strings.Contains(out, "protocol id        0x0000000000000abc") {
		t.Fatalf("inspect: %d %s\n%s", code, stderr, out)
	}
	if _, _, code := runBin("", "mint", "-client-id", "5"); code != 2 {
		t.Errorf("usage error: exit %d; want 2", code)
	}
	if _, _, code := runBin(token[:100], "inspect"); code != 1 {
		t.Errorf("bad token: exit %d; want 1", code)
	}
}

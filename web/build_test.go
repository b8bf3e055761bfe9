package web

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBuild: Build writes a WebAssembly module and the two scripts a page
// needs, the toolchain's wasm_exec.js among them (without a browser: the
// browser test in cmd/netcode-webdemo runs them).
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the client for js/wasm")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "dist")
	if err := Build(ctx, dir); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(filepath.Join(dir, "netcode.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(wasm, []byte("\x00asm\x01\x00\x00\x00")) {
		t.Errorf("netcode.wasm starts %x; want a WebAssembly 1 module", wasm[:min(8, len(wasm))])
	}
	t.Logf("netcode.wasm: %d bytes", len(wasm))
	execJS, err := os.ReadFile(filepath.Join(dir, "wasm_exec.js"))
	if err != nil || !strings.Contains(string(execJS), "globalThis.Go") {
		t.Errorf("wasm_exec.js missing or not Go's (%v)", err)
	}
	js, err := os.ReadFile(filepath.Join(dir, "netcode.js"))
	want, _ := Files.ReadFile("netcode.js")
	if err != nil || !bytes.Equal(js, want) {
		t.Errorf("netcode.js is not the module's (%v)", err)
	}
}

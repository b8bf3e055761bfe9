// Package web holds the browser client: netcode.js (the module pages
// import), the example page, and Build, which compiles the Go client
// (package web/wasm) to netcode.wasm and puts it beside netcode.js and Go's
// wasm_exec.js. `go run ./web/build` runs Build into web/dist.
package web

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Files are netcode.js and the example page (example/index.html).
//
//go:embed netcode.js example/index.html
var Files embed.FS

// WasmPackage is the import path of the browser client's main package.
const WasmPackage = "github.com/netcode-go/netcode/web/wasm"

// Build compiles the browser client into dir as netcode.wasm and copies
// netcode.js and the toolchain's wasm_exec.js beside it: the three files a
// page needs. It runs the go command found on PATH, in the current
// directory, which must be inside this module.
func Build(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	out, err := filepath.Abs(filepath.Join(dir, "netcode.wasm"))
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, WasmPackage)
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("web: go build %s: %v\n%s", WasmPackage, err, stderr.Bytes())
	}
	execJS, err := wasmExec(ctx)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "wasm_exec.js"), execJS, 0o644); err != nil {
		return err
	}
	js, err := Files.ReadFile("netcode.js")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "netcode.js"), js, 0o644)
}

// wasmExec reads the toolchain's wasm_exec.js: lib/wasm since Go 1.24,
// misc/wasm before. It must match the compiler that built the wasm.
func wasmExec(ctx context.Context) ([]byte, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
	if err != nil {
		return nil, fmt.Errorf("web: go env GOROOT: %w", err)
	}
	root := strings.TrimSpace(string(out))
	for _, dir := range []string{"lib/wasm", "misc/wasm"} {
		b, err := os.ReadFile(filepath.Join(root, dir, "wasm_exec.js"))
		if err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("web: no wasm_exec.js in %s/lib/wasm or %s/misc/wasm", root, root)
}

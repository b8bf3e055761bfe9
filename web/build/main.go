// Command build compiles the browser client: netcode.wasm, with
// netcode.js and Go's wasm_exec.js, into a directory (web/dist by default,
// which git ignores). Serve the three files beside the page that imports
// netcode.js.
//
//	go run ./web/build [-o DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/netcode-go/netcode/web"
)

func main() {
	out := flag.String("o", filepath.Join("web", "dist"), "output `directory`")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "build: no arguments; usage: go run ./web/build [-o DIR]")
		os.Exit(2)
	}
	if err := web.Build(context.Background(), *out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	st, err := os.Stat(filepath.Join(*out, "netcode.wasm"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s (netcode.wasm %d bytes, wasm_exec.js, netcode.js)\n", *out, st.Size())
}

package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/netcode-go/netcode/codec"
)

// runKeygen prints a new private key, or writes it to a new file readable
// only by its owner.
func runKeygen(e *env, args []string) error {
	fs := newFlagSet("keygen", "[-o FILE]")
	out := fs.String("o", "", "write the key to `FILE` (created with mode 0600; an existing file is an error) instead of stdout")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	key := make([]byte, codec.KeyBytes)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	line := hex.EncodeToString(key) + "\n"
	if *out == "" {
		_, err := fmt.Fprint(e.stdout, line)
		return err
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/netcode-go/netcode/cmd/internal/cli"
	"github.com/netcode-go/netcode/codec"
)

// maxKeyFile bounds what is read of a key file: 64 hex digits and spaces.
const maxKeyFile = 1 << 10

// readKey returns the private key from -key-file, else from
// NETCODE_PRIVATE_KEY, else nil (development mode). Errors name the
// source and never quote the content: it is a secret. A bad variable is a
// usage error; an unreadable or malformed file is a failure (exit 1), as
// with every input file of both commands.
func readKey(file string, getenv func(string) string) ([]byte, error) {
	var text, source string
	switch {
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("-key-file: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
		if err != nil {
			return nil, fmt.Errorf("-key-file %s: %w", file, err)
		}
		text, source = string(b), "-key-file "+file
	case getenv(keyEnv) != "":
		text, source = getenv(keyEnv), keyEnv
	default:
		return nil, nil
	}
	text = strings.TrimSpace(text)
	key, err := hex.DecodeString(text)
	if err != nil || len(key) != codec.KeyBytes {
		err := fmt.Errorf("%s: not %d hex digits (a %d-byte key); make one with netcode-token keygen", source, 2*codec.KeyBytes, codec.KeyBytes)
		if file == "" {
			err = cli.UsageError{Err: err} // a bad variable; a bad file is a failure
		}
		return nil, err
	}
	return key, nil
}

// devKey makes a throwaway key for this run and writes it, as 64 hex
// digits, to a new file only this user can read, for the load generator
// or token minting to use. The caller removes the file at exit.
func devKey() (key []byte, path string, err error) {
	key = make([]byte, codec.KeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, "", err
	}
	f, err := os.CreateTemp("", "netcode-server-dev-*.key") // mode 0600
	if err != nil {
		return nil, "", fmt.Errorf("writing the development key: %w", err)
	}
	_, werr := fmt.Fprintln(f, hex.EncodeToString(key))
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		os.Remove(f.Name())
		return nil, "", fmt.Errorf("writing the development key: %w", werr)
	}
	return key, f.Name(), nil
}

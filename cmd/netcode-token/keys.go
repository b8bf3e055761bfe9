package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/netcode-go/netcode/cmd/internal/cli"
	"github.com/netcode-go/netcode/codec"
)

// maxKeyFileBytes bounds a key file: 64 hex digits and some whitespace.
const maxKeyFileBytes = 1 << 10

// loadKey reads the private key from keyFile, or else from the
// environment. required says whether having neither is an error.
func loadKey(e *env, keyFile string, required bool) ([]byte, error) {
	var text, source string
	switch {
	case keyFile != "":
		f, err := os.Open(keyFile)
		if err != nil {
			return nil, fmt.Errorf("-key-file: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
		if err != nil {
			return nil, fmt.Errorf("-key-file %s: %w", keyFile, err)
		}
		if len(b) > maxKeyFileBytes {
			return nil, fmt.Errorf("-key-file %s: more than %d bytes; want 64 hex digits", keyFile, maxKeyFileBytes)
		}
		text, source = string(b), "-key-file "+keyFile
	case e.getenv(keyEnv) != "":
		text, source = e.getenv(keyEnv), keyEnv
	case required:
		return nil, usagef("no private key: give -key-file FILE or set %s (64 hex digits)", keyEnv)
	default:
		return nil, nil
	}
	key, err := parseKey(text)
	if err != nil {
		err = fmt.Errorf("%s: %w", source, err)
		if keyFile == "" {
			err = cli.UsageError{Err: err} // a bad variable; a bad file is a failure
		}
		return nil, err
	}
	return key, nil
}

// parseKey reads 64 hex digits, with surrounding whitespace. Errors never
// quote the text: it is a secret.
func parseKey(text string) ([]byte, error) {
	s := strings.TrimSpace(text)
	if i := strings.IndexFunc(s, func(r rune) bool { return !isHexDigit(r) }); i >= 0 {
		return nil, fmt.Errorf("character %d is not a hex digit; want %d hex digits (a %d-byte key)", i+1, 2*codec.KeyBytes, codec.KeyBytes)
	}
	if len(s) != 2*codec.KeyBytes {
		return nil, fmt.Errorf("%d hex digits; want %d (a %d-byte key)", len(s), 2*codec.KeyBytes, codec.KeyBytes)
	}
	return hex.DecodeString(s)
}

func isHexDigit(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F'
}

// parseProtocol reads a protocol id: 1 to 16 hex digits, 0x optional.
func parseProtocol(s string) (uint64, error) {
	if s == "" {
		return 0, usagef("-protocol is required: the game's protocol id, 1 to 16 hex digits")
	}
	t := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if t == "" || len(t) > 16 || strings.IndexFunc(t, func(r rune) bool { return !isHexDigit(r) }) >= 0 {
		return 0, usagef("-protocol %q: want 1 to 16 hex digits (0x optional)", s)
	}
	return strconv.ParseUint(t, 16, 64)
}

// addrList is a repeatable address flag.
type addrList []netip.AddrPort

func (l *addrList) String() string {
	if l == nil {
		return ""
	}
	var s []string
	for _, a := range *l {
		s = append(s, a.String())
	}
	return strings.Join(s, ",")
}

func (l *addrList) Set(s string) error {
	a, err := parseAddr(s)
	if err != nil {
		return err
	}
	*l = append(*l, a)
	return nil
}

// parseAddr reads an address a token can hold and a client can dial.
func parseAddr(s string) (netip.AddrPort, error) {
	a, err := netip.ParseAddrPort(s)
	if err != nil {
		return a, fmt.Errorf("%q: want IPv4:port or [IPv6]:port", s)
	}
	if err := codec.CheckAddress(a); err != nil {
		return a, fmt.Errorf("%q: an IPv6 zone cannot go in a token", s)
	}
	if a.Port() == 0 || a.Addr().IsUnspecified() {
		return a, fmt.Errorf("%q: want a specific address and a port from 1 to 65535", s)
	}
	return a, nil
}

// checkAddrCounts checks the public and internal address lists.
func checkAddrCounts(public, internal []netip.AddrPort) error {
	if n := len(public); n < 1 || n > codec.MaxServersPerConnect {
		return usagef("-addr: %d addresses; allowed 1 to %d", n, codec.MaxServersPerConnect)
	}
	if len(internal) != 0 && len(internal) != len(public) {
		return usagef("-internal-addr: %d addresses for %d -addr; give none (the same as -addr) or one per -addr", len(internal), len(public))
	}
	return nil
}

var errUserDataBoth = errors.New("give -user-data or -user-data-file, not both")

// loadUserData reads user data as hex or from a file: at most 256 bytes.
func loadUserData(hexText, file string) ([]byte, error) {
	var b []byte
	switch {
	case hexText != "" && file != "":
		return nil, cli.UsageError{Err: errUserDataBoth}
	case hexText != "":
		var err error
		if b, err = hex.DecodeString(hexText); err != nil {
			return nil, usagef("-user-data: not hex (%v); want up to %d bytes as %d hex digits", err, codec.UserDataBytes, 2*codec.UserDataBytes)
		}
		if len(b) > codec.UserDataBytes {
			return nil, usagef("-user-data: %d bytes; allowed 0 to %d", len(b), codec.UserDataBytes)
		}
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("-user-data-file: %w", err)
		}
		defer f.Close()
		if b, err = io.ReadAll(io.LimitReader(f, codec.UserDataBytes+1)); err != nil {
			return nil, fmt.Errorf("-user-data-file %s: %w", file, err)
		}
		if len(b) > codec.UserDataBytes {
			return nil, fmt.Errorf("-user-data-file %s: more than %d bytes; allowed 0 to %d", file, codec.UserDataBytes, codec.UserDataBytes)
		}
	}
	return b, nil
}

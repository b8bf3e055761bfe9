package main

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/netcode-go/netcode/cmd/internal/cli"
	"github.com/netcode-go/netcode/engine"
)

// runMint mints a connect token and prints it as base64 on one line.
func runMint(e *env, args []string) error {
	fs := newFlagSet("mint", "-protocol HEX -key-file F -client-id N -addr A [-addr B ...] [flags]")
	var protocol, keyFile, userData, userDataFile string
	var clientID *uint64
	var expire, timeout int64
	var url bool
	fs.Hex(&protocol, "protocol", "protocol id: 1 to 16 `HEX` digits (required)")
	fs.StringVar(&keyFile, "key-file", "", "`FILE` holding the private key as 64 hex digits (default: $"+keyEnv+")")
	cli.Var(fs, &clientID, "client-id", nil, "client id: a decimal `N` from 0 to 18446744073709551615 (required)", parseClientID, formatClientID)
	var public, internal addrList
	fs.Var(&public, "addr", "server `ADDR`ess the client dials, IPv4:port or [IPv6]:port; repeat for 1 to 32 servers in order of preference")
	fs.Var(&internal, "internal-addr", "the `ADDR`ess each server knows itself by, one per -addr in the same order (default: the same as -addr)")
	fs.Int64(&expire, "expire", int64(defaultTokenLifetime/time.Second), 1, math.MaxInt32, true, "`SECONDS` from now until the token expires, or -1 for never; keep it equal to the servers' MaxConnectTokenLifetime")
	fs.Int64(&timeout, "timeout", 10, 1, math.MaxInt32, true, "connection timeout in `SECONDS`, 1 to 2147483647, or -1 for none (development only)")
	fs.StringVar(&userData, "user-data", "", "user data for the server: up to 256 bytes as `HEX`")
	fs.StringVar(&userDataFile, "user-data-file", "", "read the user data (up to 256 bytes) from `FILE`")
	fs.Bool(&url, "url", false, "print with the URL-safe base64 alphabet (- and _), unpadded")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	p, err := mintParams(e, protocol, clientID, public, internal, expire, timeout)
	if err != nil {
		return err
	}
	if p.UserData, err = loadUserData(userData, userDataFile); err != nil {
		return err
	}
	if p.PrivateKey, err = loadKey(e, keyFile, true); err != nil {
		return err
	}
	token, err := engine.GenerateConnectToken(p)
	if err != nil {
		return err
	}
	if note := lifetimeNote(expire); note != "" {
		fmt.Fprintln(e.stderr, "netcode-token mint: note:", note)
	}
	text := engine.EncodeToken(token)
	if url {
		text = base64.RawURLEncoding.EncodeToString(token)
	}
	_, err = fmt.Fprintln(e.stdout, text)
	return err
}

// parseClientID reads -client-id: a decimal uint64.
func parseClientID(s string) (*uint64, error) {
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("want a decimal number from 0 to 18446744073709551615")
	}
	return &v, nil
}

func formatClientID(v *uint64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatUint(*v, 10)
}

// mintParams checks the flags together (each was checked as parsed).
func mintParams(e *env, protocol string, clientID *uint64, public, internal []netip.AddrPort, expire, timeout int64) (engine.TokenParams, error) {
	var p engine.TokenParams
	var err error
	if p.ProtocolID, err = parseProtocol(protocol); err != nil {
		return p, err
	}
	if clientID == nil {
		return p, usagef("-client-id is required: a decimal number 0 to 18446744073709551615")
	}
	p.ClientID = *clientID
	if err := checkAddrCounts(public, internal); err != nil {
		return p, err
	}
	p.PublicAddresses, p.InternalAddresses = public, internal
	p.ExpireSeconds = expire
	p.TimeoutSeconds = int32(timeout)
	p.Now = e.now()
	return p, nil
}

// lifetimeNote explains what a token lifetime other than the servers'
// default MaxConnectTokenLifetime does under the restart rule.
func lifetimeNote(expire int64) string {
	def := int64(defaultTokenLifetime / time.Second)
	switch {
	case expire == -1:
		return "a token that never expires passes every server's restart rule: a server that restarts (clearing its connect-token history) admits it again"
	case expire < def:
		return fmt.Sprintf("-expire %d is shorter than the servers' default MaxConnectTokenLifetime (%d s): a server started less than %d s before this token was minted refuses it", expire, def, def-expire)
	case expire > def:
		return fmt.Sprintf("-expire %d is longer than the servers' default MaxConnectTokenLifetime (%d s): unless the servers' setting matches, a server that restarts (clearing its connect-token history) within %d s of minting admits this token again", expire, def, expire-def)
	}
	return ""
}

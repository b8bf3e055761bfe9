package main

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"time"

	"github.com/netcode-go/netcode/engine"
)

// runMint mints a connect token and prints it as base64 on one line.
func runMint(e *env, args []string) error {
	fs := newFlagSet(e, "mint", "-protocol HEX -key-file F -client-id N -addr A [-addr B ...] [flags]")
	protocol := fs.String("protocol", "", "protocol id: 1 to 16 `HEX` digits (required)")
	keyFile := fs.String("key-file", "", "`FILE` holding the private key as 64 hex digits (default: $"+keyEnv+")")
	clientID := fs.String("client-id", "", "client id: a decimal `N` from 0 to 18446744073709551615 (required)")
	var public, internal addrList
	fs.Var(&public, "addr", "server `ADDR`ess the client dials, IPv4:port or [IPv6]:port; repeat for 1 to 32 servers in order of preference")
	fs.Var(&internal, "internal-addr", "the `ADDR`ess each server knows itself by, one per -addr in the same order (default: the same as -addr)")
	expire := fs.Int64("expire", int64(defaultTokenLifetime/time.Second), "`SECONDS` from now until the token expires, or -1 for never; keep it equal to the servers' MaxConnectTokenLifetime")
	timeout := fs.Int64("timeout", 10, "connection timeout in `SECONDS`, 1 to 2147483647, or -1 for none (development only)")
	userData := fs.String("user-data", "", "user data for the server: up to 256 bytes as `HEX`")
	userDataFile := fs.String("user-data-file", "", "read the user data (up to 256 bytes) from `FILE`")
	url := fs.Bool("url", false, "print with the URL-safe base64 alphabet (- and _), unpadded")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	p, err := mintParams(e, *protocol, *clientID, public, internal, *expire, *timeout)
	if err != nil {
		return err
	}
	if p.UserData, err = loadUserData(*userData, *userDataFile); err != nil {
		return err
	}
	if p.PrivateKey, err = loadKey(e, *keyFile, true); err != nil {
		return err
	}
	token, err := engine.GenerateConnectToken(p)
	if err != nil {
		return err
	}
	if note := lifetimeNote(*expire); note != "" {
		fmt.Fprintln(e.stderr, "netcode-token mint: note:", note)
	}
	text := engine.EncodeToken(token)
	if *url {
		text = base64.RawURLEncoding.EncodeToString(token)
	}
	_, err = fmt.Fprintln(e.stdout, text)
	return err
}

// mintParams checks the flags that need no file.
func mintParams(e *env, protocol, clientID string, public, internal []netip.AddrPort, expire, timeout int64) (engine.TokenParams, error) {
	var p engine.TokenParams
	var err error
	if p.ProtocolID, err = parseProtocol(protocol); err != nil {
		return p, err
	}
	if clientID == "" {
		return p, usagef("-client-id is required: a decimal number 0 to 18446744073709551615")
	}
	if p.ClientID, err = strconv.ParseUint(clientID, 10, 64); err != nil {
		return p, usagef("-client-id %q: want a decimal number 0 to 18446744073709551615", clientID)
	}
	if err := checkAddrCounts(public, internal); err != nil {
		return p, err
	}
	p.PublicAddresses, p.InternalAddresses = public, internal
	switch {
	case expire == 0:
		return p, usagef("-expire 0: the token would expire as it is created; allowed 1 or more seconds, or -1 for never")
	case expire < -1:
		return p, usagef("-expire %d: the token would expire before it is created; allowed 1 or more seconds, or -1 for never", expire)
	}
	p.ExpireSeconds = expire
	if timeout == 0 || timeout < -1 || timeout > math.MaxInt32 {
		return p, usagef("-timeout %d: allowed 1 to %d seconds, or -1 for no timeout", timeout, math.MaxInt32)
	}
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

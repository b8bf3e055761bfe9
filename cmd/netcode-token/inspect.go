package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
)

// Base64 lengths of a connect token.
var (
	paddedLen   = base64.StdEncoding.EncodedLen(codec.ConnectTokenBytes)    // 2732
	unpaddedLen = base64.RawStdEncoding.EncodedLen(codec.ConnectTokenBytes) // 2731
)

// maxTokenText bounds what inspect reads: a token with generous line
// breaks and whitespace.
const maxTokenText = 64 << 10

// runInspect prints a token's fields.
func runInspect(e *env, args []string) error {
	fs := newFlagSet("inspect", "[-key-file F] [-show-keys] [-json] [TOKEN | -]")
	keyFile := fs.String("key-file", "", "`FILE` holding the private key as 64 hex digits, to open the private part (default: $"+keyEnv+" if set)")
	var showKeys, asJSON bool
	fs.Bool(&showKeys, "show-keys", false, "print the session keys: they are the client's secrets")
	fs.Bool(&asJSON, "json", false, "print JSON")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	var text string
	switch fs.NArg() {
	case 0:
	case 1:
		text = fs.Arg(0)
	default:
		return usagef("%d arguments; want one token, or none (or -) to read it from stdin", fs.NArg())
	}
	if text == "" || text == "-" {
		b, err := io.ReadAll(io.LimitReader(e.stdin, maxTokenText+1))
		if err != nil {
			return fmt.Errorf("stdin: %w", err)
		}
		if len(b) > maxTokenText {
			return fmt.Errorf("stdin: more than %d bytes; a connect token is %d base64 characters", maxTokenText, paddedLen)
		}
		text = string(b)
	}
	key, err := loadKey(e, *keyFile, false)
	if err != nil {
		return err
	}
	info, err := inspectToken(text, key, e.now())
	if err != nil {
		return err
	}
	if !showKeys {
		info.ClientToServerKey, info.ServerToClientKey = "", ""
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	return info.print(e.stdout, showKeys)
}

// inspected is a token's content as inspect prints it. 64-bit numbers are
// decimal strings, as in the C reference's vectors: JSON numbers lose them.
type inspected struct {
	Version           string            `json:"version"`
	ProtocolID        string            `json:"protocol_id"`
	CreateTimestamp   string            `json:"create_timestamp"`
	CreatedAt         string            `json:"created_at"`
	ExpireTimestamp   string            `json:"expire_timestamp"`
	ExpiresAt         string            `json:"expires_at"`
	Expired           bool              `json:"expired"`
	TimeoutSeconds    int32             `json:"timeout_seconds"`
	Nonce             string            `json:"nonce"`
	ServerAddresses   []string          `json:"server_addresses"`
	ClientToServerKey string            `json:"client_to_server_key,omitempty"`
	ServerToClientKey string            `json:"server_to_client_key,omitempty"`
	Private           *inspectedPrivate `json:"private,omitempty"`

	create, expire uint64
}

type inspectedPrivate struct {
	ClientID        string   `json:"client_id"`
	TimeoutSeconds  int32    `json:"timeout_seconds"`
	ServerAddresses []string `json:"server_addresses"`
	UserData        string   `json:"user_data"`
	KeysMatch       bool     `json:"keys_match"`
}

// inspectToken decodes base64 text and reads the token; with key it opens
// the private part. Errors say what is wrong and what is allowed, and never
// quote the token (it is a credential).
func inspectToken(text string, key []byte, now time.Time) (*inspected, error) {
	raw, err := decodeTokenText(text)
	if err != nil {
		return nil, err
	}
	var ct codec.ConnectToken
	if err := codec.ReadConnectToken(raw, &ct); err != nil {
		return nil, publicError(raw, err)
	}
	if ct.ExpireTimestamp < ct.CreateTimestamp {
		return nil, fmt.Errorf("token: expire timestamp %d is before create timestamp %d; a token expires at or after its creation (2^64-1: never)", ct.ExpireTimestamp, ct.CreateTimestamp)
	}
	info := &inspected{
		Version:           strings.TrimRight(string(codec.VersionInfo[:]), "\x00"),
		ProtocolID:        fmt.Sprintf("%#016x", ct.ProtocolID),
		CreateTimestamp:   strconv.FormatUint(ct.CreateTimestamp, 10),
		CreatedAt:         humanTime(ct.CreateTimestamp),
		ExpireTimestamp:   strconv.FormatUint(ct.ExpireTimestamp, 10),
		ExpiresAt:         humanTime(ct.ExpireTimestamp),
		Expired:           now.Unix() >= 0 && uint64(now.Unix()) >= ct.ExpireTimestamp,
		TimeoutSeconds:    ct.TimeoutSeconds,
		Nonce:             hex.EncodeToString(ct.Nonce[:]),
		ServerAddresses:   addrStrings(ct.Addresses()),
		ClientToServerKey: hex.EncodeToString(ct.ClientToServerKey[:]),
		ServerToClientKey: hex.EncodeToString(ct.ServerToClientKey[:]),
		create:            ct.CreateTimestamp,
		expire:            ct.ExpireTimestamp,
	}
	if key == nil {
		return info, nil
	}
	tk, err := aead.NewTokenKey(key)
	if err != nil {
		return nil, err
	}
	priv := ct.PrivateData
	if err := tk.OpenPrivateToken(priv[:], ct.ProtocolID, ct.ExpireTimestamp, ct.Nonce[:]); err != nil {
		return nil, errors.New("token: the private part does not open with this key: another key, or a token altered after minting (the protocol id, expire timestamp and nonce are authenticated too)")
	}
	var pt codec.PrivateToken
	if err := codec.ReadPrivateToken(priv[:], &pt); err != nil {
		return nil, fmt.Errorf("token: the private part opens but does not parse: %s", reasonText(err))
	}
	info.Private = &inspectedPrivate{
		ClientID:        strconv.FormatUint(pt.ClientID, 10),
		TimeoutSeconds:  pt.TimeoutSeconds,
		ServerAddresses: addrStrings(pt.Addresses()),
		UserData:        hex.EncodeToString(pt.UserData[:]),
		KeysMatch:       pt.ClientToServerKey == ct.ClientToServerKey && pt.ServerToClientKey == ct.ServerToClientKey,
	}
	return info, nil
}

// decodeTokenText decodes a token from standard or URL-safe base64,
// padded or not, ignoring whitespace and line breaks.
func decodeTokenText(text string) ([]byte, error) {
	s := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, text)
	if s == "" {
		return nil, fmt.Errorf("token: empty; want the base64 of a %d-byte connect token (%d characters)", codec.ConnectTokenBytes, paddedLen)
	}
	body := strings.TrimRight(s, "=")
	pad := len(s) - len(body)
	if pad > 2 || pad > 0 && len(s)%4 != 0 {
		return nil, errors.New("token: wrong base64 padding; want none, or = signs up to a multiple of 4 characters")
	}
	std, url := strings.ContainsAny(body, "+/"), strings.ContainsAny(body, "-_")
	if std && url {
		return nil, errors.New("token: mixes the standard (+ /) and URL-safe (- _) base64 alphabets; want one of them")
	}
	enc := base64.RawStdEncoding
	if url {
		enc = base64.RawURLEncoding
	}
	if len(body)%4 == 1 {
		return nil, fmt.Errorf("token: %d base64 characters cannot encode whole bytes (cut short?); a connect token is %d characters padded, %d unpadded", len(body), paddedLen, unpaddedLen)
	}
	raw, err := enc.DecodeString(body)
	if err != nil {
		var ce base64.CorruptInputError
		if errors.As(err, &ce) && int(ce) < len(body) {
			return nil, fmt.Errorf("token: character %d (%q) is not base64; want A-Z a-z 0-9 and + / (standard) or - _ (URL-safe), with optional = padding", int(ce)+1, body[ce])
		}
		return nil, fmt.Errorf("token: not base64: %v", err)
	}
	if len(raw) != codec.ConnectTokenBytes {
		return nil, fmt.Errorf("token: %d base64 characters decode to %d bytes; a connect token is %d bytes (%d characters padded, %d unpadded)", len(s), len(raw), codec.ConnectTokenBytes, paddedLen, unpaddedLen)
	}
	return raw, nil
}

// Offsets in the public token, for error messages.
const (
	offTimeout = codec.VersionInfoBytes + 8 + 8 + 8 + codec.ConnectTokenNonceBytes + codec.PrivateTokenBytes
	offCount   = offTimeout + 4
)

// publicError describes why the public part does not parse.
func publicError(raw []byte, err error) error {
	switch codec.ReasonOf(err) {
	case codec.ReasonVersion:
		return fmt.Errorf("token: version info %q; this reads %q tokens", printableVersion(raw[:codec.VersionInfoBytes]), strings.TrimRight(string(codec.VersionInfo[:]), "\x00"))
	case codec.ReasonAddressCount:
		return fmt.Errorf("token: %d server addresses; allowed 1 to %d", binary.LittleEndian.Uint32(raw[offCount:]), codec.MaxServersPerConnect)
	}
	return fmt.Errorf("token: %s", reasonText(err))
}

func reasonText(err error) string {
	return strings.TrimPrefix(err.Error(), "netcode: ")
}

func printableVersion(b []byte) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '?'
		}
		return r
	}, string(bytes.TrimRight(b, "\x00")))
}

func addrStrings(addrs []netip.AddrPort) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}

// lastRFC3339 is the last second RFC 3339 can write (9999-12-31T23:59:59Z).
const lastRFC3339 = 253402300799

func humanTime(ts uint64) string {
	switch {
	case ts == math.MaxUint64:
		return "never"
	case ts > lastRFC3339:
		return "after 9999"
	}
	return time.Unix(int64(ts), 0).UTC().Format(time.RFC3339)
}

func timeoutText(t int32) string {
	if t < 0 {
		return fmt.Sprintf("%d (no timeout)", t)
	}
	return fmt.Sprintf("%d s", t)
}

// print writes the fields as aligned text.
func (in *inspected) print(w io.Writer, showKeys bool) error {
	var b strings.Builder
	line := func(name, format string, args ...any) {
		fmt.Fprintf(&b, "%-18s %s\n", name, fmt.Sprintf(format, args...))
	}
	addrs := func(name string, list []string) {
		line(name, "%d", len(list))
		for _, a := range list {
			line("", "%s", a)
		}
	}
	line("version", "%s", in.Version)
	line("protocol id", "%s", in.ProtocolID)
	line("created", "%s (%s)", in.CreateTimestamp, in.CreatedAt)
	switch {
	case in.expire == math.MaxUint64:
		line("expires", "never (%s)", in.ExpireTimestamp)
	default:
		state := "valid"
		if in.Expired {
			state = "expired"
		}
		line("expires", "%s (%s; %d s after creation; %s)", in.ExpireTimestamp, in.ExpiresAt, in.expire-in.create, state)
	}
	line("timeout", "%s", timeoutText(in.TimeoutSeconds))
	line("nonce", "%s", in.Nonce)
	addrs("servers", in.ServerAddresses)
	if showKeys {
		line("client-to-server", "%s", in.ClientToServerKey)
		line("server-to-client", "%s", in.ServerToClientKey)
	} else {
		line("session keys", "not shown (-show-keys: they are the client's secrets)")
	}
	if p := in.Private; p != nil {
		line("private part", "opened with the key")
		line("  client id", "%s", p.ClientID)
		line("  timeout", "%s", timeoutText(p.TimeoutSeconds))
		addrs("  servers", p.ServerAddresses)
		ud := strings.TrimRight(p.UserData, "0")
		ud = ud[:len(ud)+len(ud)%2] // whole bytes
		line("  user data", "%s (%d bytes, then zeros to %d)", ud, len(ud)/2, codec.UserDataBytes)
		if !p.KeysMatch {
			line("  warning", "its session keys differ from the public part's: a client with this token cannot talk to the server")
		}
	} else {
		line("private part", "encrypted (-key-file or $%s opens it)", keyEnv)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

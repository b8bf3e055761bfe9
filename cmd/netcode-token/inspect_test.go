package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
)

// mintRaw mints a token in-process and returns its bytes.
func mintRaw(t *testing.T, extra ...string) []byte {
	t.Helper()
	r := runCmd(t, keyVars, "", mintArgs(extra...)...)
	if r.code != 0 {
		t.Fatalf("mint: %s", r.stderr)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// resealed returns raw with its private part replaced by plaintext sealed
// with the test key.
func resealed(t *testing.T, raw []byte, plaintext []byte) []byte {
	t.Helper()
	var ct codec.ConnectToken
	if err := codec.ReadConnectToken(raw, &ct); err != nil {
		t.Fatal(err)
	}
	key, _ := hex.DecodeString(testKeyHex)
	tk, err := aead.NewTokenKey(key)
	if err != nil {
		t.Fatal(err)
	}
	copy(ct.PrivateData[:], plaintext)
	if err := tk.SealPrivateToken(ct.PrivateData[:], ct.ProtocolID, ct.ExpireTimestamp, ct.Nonce[:]); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, codec.ConnectTokenBytes)
	if err := codec.WriteConnectToken(out, &ct); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestInspectText(t *testing.T) {
	text := base64.StdEncoding.EncodeToString(mintRaw(t, "-user-data", "cafe"))
	r := runCmd(t, keyVars, text, "inspect")
	for _, want := range []string{
		"version            NETCODE 1.02",
		"protocol id        0x1122334455667788",
		"created            1800000000 (2027-01-15T08:00:00Z)",
		"expires            1800000030 (2027-01-15T08:00:30Z; 30 s after creation; valid)",
		"timeout            10 s",
		"servers            1\n                   203.0.113.7:40000",
		"session keys       not shown",
		"  client id        42",
		"  user data        cafe (2 bytes, then zeros to 256)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	// Without the key the private part stays closed.
	if r := runCmd(t, nil, text, "inspect"); r.code != 0 || !strings.Contains(r.stdout, "private part       encrypted") || strings.Contains(r.stdout, "client id") {
		t.Errorf("without a key: exit %d\n%s", r.code, r.stdout)
	}
}

func TestInspectErrors(t *testing.T) {
	raw := mintRaw(t)
	std := base64.StdEncoding.EncodeToString(raw)
	mutate := func(f func(b []byte)) string {
		b := append([]byte(nil), raw...)
		f(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	mixed := []byte(std)
	if i := strings.IndexAny(std, "+/"); i >= 0 {
		mixed[(i+1)%len(mixed)] = '_'
	}
	badPrivate := make([]byte, codec.PrivateTokenBytes) // address count 0
	binary.LittleEndian.PutUint64(badPrivate, 42)
	otherKey := strings.Repeat("11", 32)

	tests := []struct {
		name  string
		vars  map[string]string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"empty", nil, " \n", nil, 1, "token: empty; want the base64 of a 2048-byte connect token"},
		{"truncated", nil, std[:2000], nil, 1, "token: 2000 base64 characters decode to 1500 bytes; a connect token is 2048 bytes (2732 characters padded, 2731 unpadded)"},
		{"truncated mid-byte", nil, std[:2729], nil, 1, "2729 base64 characters cannot encode whole bytes (cut short?)"},
		{"one byte short", nil, base64.StdEncoding.EncodeToString(raw[:2047]), nil, 1, "decode to 2047 bytes"},
		{"one byte long", nil, base64.StdEncoding.EncodeToString(append(raw, 0)), nil, 1, "decode to 2049 bytes"},
		{"bad character", nil, std[:10] + "*" + std[11:], nil, 1, `character 11 ('*') is not base64; want A-Z a-z 0-9 and + / (standard) or - _ (URL-safe)`},
		{"mixed alphabets", nil, string(mixed), nil, 1, "mixes the standard (+ /) and URL-safe (- _) base64 alphabets"},
		{"too much padding", nil, std + "==", nil, 1, "wrong base64 padding"},
		{"padding not to a multiple of 4", nil, std[:2731] + "==", nil, 1, "wrong base64 padding"},
		{"stdin too large", nil, strings.Repeat("A", maxTokenText+1), nil, 1, "stdin: more than 65536 bytes"},
		{"two arguments", nil, "", []string{std, std}, 2, "2 arguments; want one token"},
		{"version", nil, mutate(func(b []byte) { copy(b, "NETCODE 1.01") }), nil, 1, `token: version info "NETCODE 1.01"; this reads "NETCODE 1.02" tokens`},
		{"0 addresses", nil, mutate(func(b []byte) { binary.LittleEndian.PutUint32(b[offCount:], 0) }), nil, 1, "token: 0 server addresses; allowed 1 to 32"},
		{"33 addresses", nil, mutate(func(b []byte) { binary.LittleEndian.PutUint32(b[offCount:], 33) }), nil, 1, "token: 33 server addresses; allowed 1 to 32"},
		{"address type", nil, mutate(func(b []byte) { b[offCount+4] = 3 }), nil, 1, "address type is not 1 (IPv4) or 2 (IPv6)"},
		{"expiry before creation", nil, mutate(func(b []byte) { binary.LittleEndian.PutUint64(b[29:], 1_799_999_999) }), nil, 1, "expire timestamp 1799999999 is before create timestamp 1800000000; a token expires at or after its creation"},
		{"wrong key", map[string]string{keyEnv: otherKey}, std, nil, 1, "the private part does not open with this key"},
		{"altered expiry", keyVars, mutate(func(b []byte) { b[29]++ }), nil, 1, "does not open with this key"},
		{"key of 31 bytes", map[string]string{keyEnv: otherKey[:62]}, std, nil, 2, "NETCODE_PRIVATE_KEY: 62 hex digits; want 64 (a 32-byte key)"},
		{"private part unreadable", keyVars, base64.StdEncoding.EncodeToString(resealed(t, raw, badPrivate)), nil, 1, "the private part opens but does not parse: server address count not in [1,32]"},
		{"unknown flag", nil, std, []string{"-key", "x"}, 2, "flag provided but not defined: -key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, tt.vars, tt.stdin, append([]string{"inspect"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tt.code, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("a failed inspect printed %q", r.stdout)
			}
			if strings.Contains(r.stderr, std[100:140]) {
				t.Errorf("error of %d bytes: it must not quote the token", len(r.stderr))
			}
		})
	}
}

// A private part whose session keys differ from the public ones is shown,
// with a warning.
func TestInspectKeyMismatch(t *testing.T) {
	raw := mintRaw(t)
	var ct codec.ConnectToken
	codec.ReadConnectToken(raw, &ct)
	pt := codec.PrivateToken{ClientID: 9, TimeoutSeconds: 10, NumServerAddresses: 1}
	pt.ServerAddresses[0] = ct.ServerAddresses[0]
	pt.ClientToServerKey[0] = 1
	plain := make([]byte, codec.PrivateTokenBytes)
	if err := codec.WritePrivateToken(plain, &pt); err != nil {
		t.Fatal(err)
	}
	text := base64.StdEncoding.EncodeToString(resealed(t, raw, plain))
	if in := inspectJSON(t, keyVars, text); in.Private == nil || in.Private.KeysMatch {
		t.Errorf("private %+v; want keys_match false", in.Private)
	}
	if r := runCmd(t, keyVars, text, "inspect"); !strings.Contains(r.stdout, "session keys differ") {
		t.Errorf("no warning:\n%s", r.stdout)
	}
}

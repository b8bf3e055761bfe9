package main

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine/backend"
)

// Token text in any form: inspect never panics, and what it accepts is
// the base64 of a 2048-byte token whose fields it reports.
// Seeds are in testdata/fuzz/FuzzInspectToken.
func FuzzInspectToken(f *testing.F) {
	key, _ := hex.DecodeString(testKeyHex)
	f.Fuzz(func(t *testing.T, text string, withKey bool) {
		k := key
		if !withKey {
			k = nil
		}
		in, err := inspectToken(text, k, testNow)
		if err != nil {
			return
		}
		raw, err := decodeTokenText(text)
		if err != nil || len(raw) != codec.ConnectTokenBytes {
			t.Fatalf("inspectToken accepted what decodeTokenText refuses (%d bytes, %v)", len(raw), err)
		}
		const offNonce = codec.VersionInfoBytes + 8 + 8 + 8
		if in.Nonce != hex.EncodeToString(raw[offNonce:offNonce+codec.ConnectTokenNonceBytes]) {
			t.Fatal("reported nonce is not the token's")
		}
		if (in.Private != nil) != withKey {
			t.Fatal("private part opened without the key, or not with it")
		}
	})
}

// A hash file's content: parseHashes never panics, and what it accepts is
// 1 to 32 hashes, each the hex of a line of the input, in order.
// Seeds are in testdata/fuzz/FuzzParseHashes.
func FuzzParseHashes(f *testing.F) {
	f.Add([]byte(strings.Repeat("ab", 32) + "\n"))
	f.Add([]byte("# comment\n\n" + strings.Repeat("AB", 32) + "\r\n" + strings.Repeat("0", 64)))
	f.Add([]byte("xyz\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		hashes, err := parseHashes(b)
		if err != nil {
			return
		}
		if len(hashes) < 1 || len(hashes) > backend.MaxServers {
			t.Fatalf("%d hashes accepted", len(hashes))
		}
		lower := strings.ToLower(string(b))
		at := 0
		for i, h := range hashes {
			k := strings.Index(lower[at:], hex.EncodeToString(h[:]))
			if k < 0 {
				t.Fatalf("hash %d (%x) is not in the input, in order", i, h)
			}
			at += k + 64
		}
	})
}

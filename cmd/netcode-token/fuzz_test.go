package main

import (
	"encoding/hex"
	"testing"

	"github.com/netcode-go/netcode/codec"
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

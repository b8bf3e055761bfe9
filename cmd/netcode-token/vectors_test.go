package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// vectorsDir is $NETCODE_VECTORS, or the repository's testdata/vectors.
// The vectors are in the repository: missing ones fail, never skip.
func vectorsDir(t *testing.T) string {
	dir := os.Getenv("NETCODE_VECTORS")
	if dir == "" {
		dir = filepath.Join("..", "..", "testdata", "vectors")
	}
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		t.Fatalf("no vectors in %s: %v", dir, err)
	}
	return dir
}

type vectorAddress struct {
	String string `json:"string"`
}

type publicVector struct {
	Name   string `json:"name"`
	Inputs struct {
		ProtocolID        string          `json:"protocol_id"`
		CreateTimestamp   string          `json:"create_timestamp"`
		ExpireTimestamp   string          `json:"expire_timestamp"`
		Nonce             string          `json:"nonce"`
		TimeoutSeconds    int32           `json:"timeout_seconds"`
		PublicAddresses   []vectorAddress `json:"public_server_addresses"`
		ClientToServerKey string          `json:"client_to_server_key"`
		ServerToClientKey string          `json:"server_to_client_key"`
		PrivateKey        string          `json:"private_key"`
		Private           struct {
			ClientID          string          `json:"client_id"`
			TimeoutSeconds    int32           `json:"timeout_seconds"`
			InternalAddresses []vectorAddress `json:"internal_server_addresses"`
			UserData          string          `json:"user_data"`
		} `json:"private"`
	} `json:"inputs"`
	Token string `json:"token"`
}

// The C reference's public tokens inspect to their recorded fields, in
// both base64 alphabets, without the key (public part) and with it.
func TestInspectVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(vectorsDir(t), "connect_token_public.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Kind    string         `json:"kind"`
		Vectors []publicVector `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if file.Kind != "connect_token_public" || len(file.Vectors) == 0 {
		t.Fatalf("kind %q with %d vectors", file.Kind, len(file.Vectors))
	}
	for _, v := range file.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			token, err := hex.DecodeString(v.Token)
			if err != nil {
				t.Fatal(err)
			}
			in := v.Inputs
			protocol, _ := strconv.ParseUint(in.ProtocolID, 10, 64)
			wantProtocol := fmt.Sprintf("0x%016x", protocol)
			for _, form := range []string{base64.StdEncoding.EncodeToString(token), base64.RawURLEncoding.EncodeToString(token)} {
				pub := inspectJSON(t, nil, form, "-show-keys")
				if pub.Private != nil {
					t.Fatal("private part opened without a key")
				}
				got := inspectJSON(t, map[string]string{keyEnv: in.PrivateKey}, form, "-show-keys")
				if got.ProtocolID != wantProtocol || got.CreateTimestamp != in.CreateTimestamp || got.ExpireTimestamp != in.ExpireTimestamp ||
					got.Nonce != in.Nonce || got.TimeoutSeconds != in.TimeoutSeconds ||
					got.ClientToServerKey != in.ClientToServerKey || got.ServerToClientKey != in.ServerToClientKey {
					t.Errorf("public fields %+v; want %+v", got, in)
				}
				sameAddresses(t, "public", got.ServerAddresses, in.PublicAddresses)
				p := got.Private
				if p == nil || p.ClientID != in.Private.ClientID || p.TimeoutSeconds != in.Private.TimeoutSeconds || p.UserData != in.Private.UserData || !p.KeysMatch {
					t.Fatalf("private fields %+v; want %+v", p, in.Private)
				}
				sameAddresses(t, "internal", p.ServerAddresses, in.Private.InternalAddresses)
				if (in.ExpireTimestamp == "18446744073709551615") != (got.ExpiresAt == "never") {
					t.Errorf("expires_at %q for expire timestamp %s", got.ExpiresAt, in.ExpireTimestamp)
				}
			}
		})
	}
}

func sameAddresses(t *testing.T, what string, got []string, want []vectorAddress) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s addresses %v; want %d", what, got, len(want))
	}
	for i := range got {
		g, err1 := netip.ParseAddrPort(got[i])
		w, err2 := netip.ParseAddrPort(want[i].String)
		if err1 != nil || err2 != nil || g != w {
			t.Errorf("%s address %d: %s; want %s", what, i, got[i], want[i].String)
		}
	}
}

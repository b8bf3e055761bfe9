package engine

import (
	"bytes"
	"errors"
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
)

var testPrivateKey = bytes.Repeat([]byte{0x5a}, 32)

func TestGenerateConnectToken(t *testing.T) {
	public := []netip.AddrPort{netip.MustParseAddrPort("203.0.113.7:40000"), netip.MustParseAddrPort("[2001:db8::2]:40001")}
	internal := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.7:5000"), netip.MustParseAddrPort("[fd00::2]:5001")}
	now := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		name       string
		internal   []netip.AddrPort
		expire     int64
		wantExpire uint64
	}{
		{"internal defaults to public", nil, 30, 1_700_000_030},
		{"internal differs", internal, 45, 1_700_000_045},
		{"never expires", nil, -1, math.MaxUint64},
	} {
		t.Run(c.name, func(t *testing.T) {
			user := []byte("player=42")
			token, err := GenerateConnectToken(TokenParams{
				ProtocolID: 0x99, PrivateKey: testPrivateKey, ClientID: 42,
				PublicAddresses: public, InternalAddresses: c.internal,
				ExpireSeconds: c.expire, TimeoutSeconds: 7, UserData: user, Now: now,
			})
			if err != nil {
				t.Fatal(err)
			}
			var ct codec.ConnectToken
			if err := codec.ReadConnectToken(token, &ct); err != nil {
				t.Fatal(err)
			}
			if ct.ProtocolID != 0x99 || ct.CreateTimestamp != 1_700_000_000 || ct.ExpireTimestamp != c.wantExpire || ct.TimeoutSeconds != 7 {
				t.Fatalf("public part %+v", ct)
			}
			if got := ct.Addresses(); len(got) != 2 || got[0] != public[0] || got[1] != public[1] {
				t.Fatalf("public addresses %v", got)
			}
			key, _ := aead.NewTokenKey(testPrivateKey)
			if err := key.OpenPrivateToken(ct.PrivateData[:], 0x99, ct.ExpireTimestamp, ct.Nonce[:]); err != nil {
				t.Fatalf("private part does not open with the private key: %v", err)
			}
			var priv codec.PrivateToken
			if err := codec.ReadPrivateToken(ct.PrivateData[:], &priv); err != nil {
				t.Fatal(err)
			}
			wantInternal := c.internal
			if wantInternal == nil {
				wantInternal = public
			}
			if got := priv.Addresses(); len(got) != 2 || got[0] != wantInternal[0] || got[1] != wantInternal[1] {
				t.Fatalf("internal addresses %v, want %v", got, wantInternal)
			}
			if priv.ClientID != 42 || priv.TimeoutSeconds != 7 || !bytes.HasPrefix(priv.UserData[:], user) {
				t.Fatalf("private part %+v", priv)
			}
			if priv.ClientToServerKey != ct.ClientToServerKey || priv.ServerToClientKey != ct.ServerToClientKey {
				t.Fatal("session keys differ between the public and private parts")
			}
			if priv.ClientToServerKey == priv.ServerToClientKey || priv.ClientToServerKey == [32]byte{} {
				t.Fatal("session keys are not independent random keys")
			}
		})
	}
}

func TestGenerateConnectTokenFreshKeysAndNonce(t *testing.T) {
	p := TokenParams{PrivateKey: testPrivateKey, PublicAddresses: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1")}}
	a, _ := GenerateConnectToken(p)
	b, _ := GenerateConnectToken(p)
	var ta, tb codec.ConnectToken
	_ = codec.ReadConnectToken(a, &ta)
	_ = codec.ReadConnectToken(b, &tb)
	if ta.Nonce == tb.Nonce || ta.ClientToServerKey == tb.ClientToServerKey {
		t.Fatal("two tokens share a nonce or a key")
	}
}

func TestGenerateConnectTokenErrors(t *testing.T) {
	one := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1")}
	many := make([]netip.AddrPort, 33)
	for i := range many {
		many[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)}), 1)
	}
	for _, c := range []struct {
		name string
		p    TokenParams
		want error
		says string
	}{
		{"short key", TokenParams{PrivateKey: make([]byte, 16), PublicAddresses: one}, ErrPrivateKeySize, "32 bytes"},
		{"no addresses", TokenParams{PrivateKey: testPrivateKey}, codec.ErrAddressCount, "between 1 and 32"},
		{"33 addresses", TokenParams{PrivateKey: testPrivateKey, PublicAddresses: many}, codec.ErrAddressCount, "between 1 and 32"},
		{"zero address", TokenParams{PrivateKey: testPrivateKey, PublicAddresses: make([]netip.AddrPort, 1)}, codec.ErrAddressInvalid, "IPv4 or IPv6"},
		{"mismatched internal", TokenParams{PrivateKey: testPrivateKey, PublicAddresses: one, InternalAddresses: many[:2]}, ErrAddressMismatch, "as many"},
		{"user data", TokenParams{PrivateKey: testPrivateKey, PublicAddresses: one, UserData: make([]byte, 257)}, ErrUserDataSize, "at most 256"},
		{"create before 1970", TokenParams{PrivateKey: testPrivateKey, PublicAddresses: one, Now: time.Unix(-5, 0)}, ErrCreateTime, "1970"},
	} {
		_, err := GenerateConnectToken(c.p)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.want, c.says)
		}
	}
}

func TestTokenBase64(t *testing.T) {
	token, err := GenerateConnectToken(TokenParams{PrivateKey: testPrivateKey, PublicAddresses: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1")}})
	if err != nil {
		t.Fatal(err)
	}
	s := EncodeToken(token)
	got, err := DecodeToken(s)
	if err != nil || !bytes.Equal(got, token) {
		t.Fatalf("round trip: %v", err)
	}
	if got, err := DecodeToken(strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(s), "=")); err != nil || !bytes.Equal(got, token) {
		t.Fatalf("URL alphabet without padding: %v", err)
	}
	for _, bad := range []string{"", "!!!", EncodeToken(token[:100])} {
		if _, err := DecodeToken(bad); !errors.Is(err, ErrTokenBase64) {
			t.Errorf("DecodeToken(%.20q) = %v", bad, err)
		}
	}
}

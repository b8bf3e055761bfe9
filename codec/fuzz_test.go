package codec_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/ring"
)

// Fixed fuzzing keys: seeds are sealed with them so the fuzzer starts from
// packets that pass every check and mutates from there.
var (
	fuzzProtocolID = uint64(0x1122334455667788)
	fuzzNow        = uint64(1_700_000_000)
	fuzzPacketKey  = bytes.Repeat([]byte{0x42}, 32)
	fuzzPrivateKey = bytes.Repeat([]byte{0x17}, 32)
)

func mustPacketKey(tb testing.TB, k []byte) *aead.PacketKey {
	key, err := aead.NewPacketKey(k, fuzzProtocolID)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func mustTokenKey(tb testing.TB) *aead.TokenKey {
	key, err := aead.NewTokenKey(fuzzPrivateKey)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func sampleAddresses() []netip.AddrPort {
	return []netip.AddrPort{
		netip.MustParseAddrPort("127.0.0.1:40000"),
		netip.MustParseAddrPort("[2001:db8::1]:50000"),
		netip.MustParseAddrPort("[::ffff:10.1.2.3]:1"),
	}
}

func samplePrivateToken() codec.PrivateToken {
	t := codec.PrivateToken{ClientID: 0xabcdef, TimeoutSeconds: 10}
	t.NumServerAddresses = copy(t.ServerAddresses[:], sampleAddresses())
	for i := range t.ClientToServerKey {
		t.ClientToServerKey[i] = byte(i)
		t.ServerToClientKey[i] = byte(255 - i)
	}
	for i := range t.UserData {
		t.UserData[i] = byte(i * 7)
	}
	return t
}

// samplePackets returns one valid packet of every type, sealed with
// fuzzPacketKey (requests with fuzzPrivateKey).
func samplePackets(tb testing.TB) [][]byte {
	key := mustPacketKey(tb, fuzzPacketKey)
	var out [][]byte
	add := func(n int, err error, buf []byte) {
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, slices.Clone(buf[:n]))
	}
	buf := make([]byte, codec.MaxPacketBytes)

	tok := samplePrivateToken()
	priv := make([]byte, codec.PrivateTokenBytes)
	if err := codec.WritePrivateToken(priv, &tok); err != nil {
		tb.Fatal(err)
	}
	nonce := bytes.Repeat([]byte{9}, 24)
	if err := mustTokenKey(tb).SealPrivateToken(priv, fuzzProtocolID, fuzzNow+60, nonce); err != nil {
		tb.Fatal(err)
	}
	n, err := codec.WriteRequestPacket(buf, fuzzProtocolID, fuzzNow+60, nonce, priv)
	add(n, err, buf)
	challenge := bytes.Repeat([]byte{3}, codec.ChallengeTokenBytes)
	for _, seq := range []uint64{0, 1000, 1<<63 + 5} {
		n, err = codec.WriteDeniedPacket(buf, seq, key)
		add(n, err, buf)
		n, err = codec.WriteChallengePacket(buf, seq, 77, challenge, key)
		add(n, err, buf)
		n, err = codec.WriteResponsePacket(buf, seq, 77, challenge, key)
		add(n, err, buf)
		n, err = codec.WriteKeepAlivePacket(buf, seq, 3, 64, key)
		add(n, err, buf)
		n, err = codec.WritePayloadPacket(buf, seq, []byte("hello, netcode"), key)
		add(n, err, buf)
		n, err = codec.WriteDisconnectPacket(buf, seq, key)
		add(n, err, buf)
	}
	return out
}

func fuzzReadPacket(f *testing.F, role codec.Role) {
	for _, p := range samplePackets(f) {
		f.Add(p)
	}
	f.Add([]byte{})
	f.Add([]byte{0})
	openKey := mustPacketKey(f, fuzzPacketKey)
	sealKey := mustPacketKey(f, fuzzPacketKey)
	tokenKey := mustTokenKey(f)
	var replay ring.Replay
	f.Fuzz(func(t *testing.T, data []byte) {
		pkt := slices.Clone(data)
		replay.Reset()
		p := codec.ReadParams{Role: role, ProtocolID: fuzzProtocolID, Now: fuzzNow, Key: openKey, TokenKey: tokenKey, Replay: &replay}
		var got codec.Packet
		err := codec.ReadPacket(pkt, &p, &got)
		if err != nil {
			if r := codec.ReasonOf(err); r == codec.ReasonNone || r >= codec.NumDropReasons {
				t.Fatalf("error without a drop reason: %v", err)
			}
			return
		}
		if !role.Allows(got.Type) {
			t.Fatalf("%v accepted %v", role, got.Type)
		}
		// Round trip: writing the decoded packet gives the input back, except
		// for non-minimal sequence lengths, which readers accept but writers
		// never produce.
		out := make([]byte, codec.MaxPacketBytes)
		var n int
		switch got.Type {
		case codec.ConnectionRequest:
			token := slices.Clone(got.PrivateToken)
			if err := tokenKey.SealPrivateToken(token, fuzzProtocolID, got.ExpireTimestamp, got.TokenNonce); err != nil {
				t.Fatal(err)
			}
			n, err = codec.WriteRequestPacket(out, fuzzProtocolID, got.ExpireTimestamp, got.TokenNonce, token)
		case codec.ConnectionDenied:
			n, err = codec.WriteDeniedPacket(out, got.Sequence, sealKey)
		case codec.ConnectionChallenge:
			n, err = codec.WriteChallengePacket(out, got.Sequence, got.ChallengeSequence, got.ChallengeToken, sealKey)
		case codec.ConnectionResponse:
			n, err = codec.WriteResponsePacket(out, got.Sequence, got.ChallengeSequence, got.ChallengeToken, sealKey)
		case codec.ConnectionKeepAlive:
			n, err = codec.WriteKeepAlivePacket(out, got.Sequence, got.ClientIndex, got.MaxClients, sealKey)
		case codec.ConnectionPayload:
			n, err = codec.WritePayloadPacket(out, got.Sequence, got.Payload, sealKey)
		case codec.ConnectionDisconnect:
			n, err = codec.WriteDisconnectPacket(out, got.Sequence, sealKey)
		}
		if err != nil {
			t.Fatalf("re-encode %v: %v", got.Type, err)
		}
		minimal := got.Type == codec.ConnectionRequest || int(data[0]>>4) == codec.SequenceBytes(got.Sequence)
		if minimal && !bytes.Equal(out[:n], data) {
			t.Fatalf("round trip of %v differs:\n in %x\nout %x", got.Type, data, out[:n])
		}
		if !minimal && n >= len(data) {
			t.Fatalf("minimal re-encoding of a non-minimal packet is not shorter")
		}
	})
}

func FuzzReadPacketServer(f *testing.F) { fuzzReadPacket(f, codec.RoleServer) }

func FuzzReadPacketClient(f *testing.F) { fuzzReadPacket(f, codec.RoleClient) }

func FuzzReadPrivateToken(f *testing.F) {
	tok := samplePrivateToken()
	buf := make([]byte, codec.PrivateTokenBytes)
	if err := codec.WritePrivateToken(buf, &tok); err != nil {
		f.Fatal(err)
	}
	f.Add(buf)
	f.Add(buf[:40])
	f.Fuzz(func(t *testing.T, data []byte) {
		var got codec.PrivateToken
		if codec.ReadPrivateToken(data, &got) != nil {
			return
		}
		out := make([]byte, codec.PrivateTokenBytes)
		if err := codec.WritePrivateToken(out, &got); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var again codec.PrivateToken
		if err := codec.ReadPrivateToken(out, &again); err != nil || again != got {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, again, got)
		}
		// The bytes the token used are reproduced exactly.
		used := 8 + 4 + 4 + 2*codec.KeyBytes + codec.UserDataBytes
		for _, a := range got.Addresses() {
			used += codec.AddressBytes(a)
		}
		if !bytes.Equal(out[:used], data[:used]) {
			t.Fatalf("re-encoded bytes differ")
		}
	})
}

func FuzzReadConnectToken(f *testing.F) {
	ct := codec.ConnectToken{ProtocolID: 1, CreateTimestamp: 2, ExpireTimestamp: 3, TimeoutSeconds: -1}
	ct.NumServerAddresses = copy(ct.ServerAddresses[:], sampleAddresses())
	buf := make([]byte, codec.ConnectTokenBytes)
	if err := codec.WriteConnectToken(buf, &ct); err != nil {
		f.Fatal(err)
	}
	f.Add(buf)
	f.Fuzz(func(t *testing.T, data []byte) {
		var got codec.ConnectToken
		if codec.ReadConnectToken(data, &got) != nil {
			return
		}
		out := make([]byte, codec.ConnectTokenBytes)
		if err := codec.WriteConnectToken(out, &got); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var again codec.ConnectToken
		if err := codec.ReadConnectToken(out, &again); err != nil || again != got {
			t.Fatalf("round trip: %v", err)
		}
		used := codec.VersionInfoBytes + 3*8 + codec.ConnectTokenNonceBytes + codec.PrivateTokenBytes + 8 + 2*codec.KeyBytes
		for _, a := range got.Addresses() {
			used += codec.AddressBytes(a)
		}
		if !bytes.Equal(out[:used], data[:used]) {
			t.Fatalf("re-encoded bytes differ")
		}
	})
}

func FuzzReadChallengeToken(f *testing.F) {
	tok := codec.ChallengeToken{ClientID: 99}
	buf := make([]byte, codec.ChallengeTokenBytes)
	if err := codec.WriteChallengeToken(buf, &tok); err != nil {
		f.Fatal(err)
	}
	f.Add(buf)
	f.Add(buf[:10])
	f.Fuzz(func(t *testing.T, data []byte) {
		var got codec.ChallengeToken
		if codec.ReadChallengeToken(data, &got) != nil {
			if len(data) >= 8+codec.UserDataBytes {
				t.Fatalf("rejected %d bytes", len(data))
			}
			return
		}
		out := make([]byte, codec.ChallengeTokenBytes)
		if err := codec.WriteChallengeToken(out, &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out[:8+codec.UserDataBytes], data[:8+codec.UserDataBytes]) {
			t.Fatalf("round trip differs")
		}
	})
}

func FuzzReadAddress(f *testing.F) {
	for _, a := range sampleAddresses() {
		var buf [19]byte
		n, err := codec.WriteAddress(buf[:], a)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(buf[:n])
	}
	f.Add([]byte{3, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, n, err := codec.ReadAddress(data)
		if err != nil {
			return
		}
		var buf [19]byte
		m, err := codec.WriteAddress(buf[:], a)
		if err != nil || m != n || !bytes.Equal(buf[:m], data[:n]) {
			t.Fatalf("round trip of %v: %x, %v; input %x", a, buf[:m], err, data[:n])
		}
	})
}

// TestWriteFuzzSeeds regenerates the committed seed corpora under
// testdata/fuzz when NETCODE_WRITE_FUZZ_SEEDS=1. It also checks, always,
// that every committed corpus directory exists and is not empty.
func TestWriteFuzzSeeds(t *testing.T) {
	seeds := map[string][][]byte{}
	pkts := samplePackets(t)
	seeds["FuzzReadPacketServer"] = pkts
	seeds["FuzzReadPacketClient"] = pkts
	tok := samplePrivateToken()
	priv := make([]byte, codec.PrivateTokenBytes)
	if err := codec.WritePrivateToken(priv, &tok); err != nil {
		t.Fatal(err)
	}
	seeds["FuzzReadPrivateToken"] = [][]byte{priv}
	ct := codec.ConnectToken{ProtocolID: fuzzProtocolID, CreateTimestamp: fuzzNow, ExpireTimestamp: fuzzNow + 30, TimeoutSeconds: 5}
	ct.NumServerAddresses = copy(ct.ServerAddresses[:], sampleAddresses())
	full := make([]byte, codec.ConnectTokenBytes)
	if err := codec.WriteConnectToken(full, &ct); err != nil {
		t.Fatal(err)
	}
	seeds["FuzzReadConnectToken"] = [][]byte{full}
	ch := make([]byte, codec.ChallengeTokenBytes)
	if err := codec.WriteChallengeToken(ch, &codec.ChallengeToken{ClientID: 5}); err != nil {
		t.Fatal(err)
	}
	seeds["FuzzReadChallengeToken"] = [][]byte{ch}
	for _, a := range sampleAddresses() {
		var buf [19]byte
		n, _ := codec.WriteAddress(buf[:], a)
		seeds["FuzzReadAddress"] = append(seeds["FuzzReadAddress"], slices.Clone(buf[:n]))
	}
	write := os.Getenv("NETCODE_WRITE_FUZZ_SEEDS") == "1"
	for name, list := range seeds {
		dir := filepath.Join("testdata", "fuzz", name)
		if write {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i, s := range list {
				body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) == 0 {
			t.Errorf("no committed seeds in %s (run with NETCODE_WRITE_FUZZ_SEEDS=1): %v", dir, err)
		}
	}
}

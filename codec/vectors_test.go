package codec_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/ring"
)

// TestVectors checks every vector file in $NETCODE_VECTORS (default
// testdata/vectors at the module root) in both directions: our writers
// produce the vector's bytes from its inputs, and our readers recover every
// input from the bytes. It knows the schema, not the values, so it runs on
// any vector set of the same schema.
func TestVectors(t *testing.T) {
	// The vectors are in the repository: missing ones fail, never skip.
	dir := os.Getenv("NETCODE_VECTORS")
	if dir == "" {
		dir = filepath.Join("..", "testdata", "vectors")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no vector files (*.json) in %s", dir)
	}
	checked := map[string]bool{}
	var manifestFiles []string
	total := 0
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			Kind  string   `json:"kind"`
			Set   string   `json:"set"`
			Files []string `json:"files"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			t.Fatalf("%s: not JSON: %v", path, err)
		}
		name := filepath.Base(path)
		var n int
		switch head.Kind {
		case "connect_token_private":
			n = checkPrivateTokens(t, raw)
		case "connect_token_public":
			n = checkPublicTokens(t, raw)
		case "challenge_token":
			n = checkChallengeTokens(t, raw)
		case "packets":
			n = checkPackets(t, raw)
		case "read_packet":
			n = checkReadPacket(t, raw)
		case "replay_protection":
			n = checkReplay(t, raw)
		case "":
			if head.Files == nil {
				t.Fatalf("%s: no kind and not a manifest: a file this test does not understand", name)
			}
			manifestFiles = head.Files
			continue
		default:
			t.Fatalf("%s: unknown vector kind %q", name, head.Kind)
		}
		if n == 0 {
			t.Fatalf("%s: holds no vectors", name)
		}
		t.Logf("%s (%s set): %d vectors", name, head.Set, n)
		checked[name] = true
		total += n
	}
	if total == 0 {
		t.Fatalf("no vectors in %s", dir)
	}
	for _, f := range manifestFiles {
		if !checked[f] {
			t.Errorf("manifest lists %s but it was not found or not checked", f)
		}
	}
}

func mustDecode[T any](t *testing.T, raw []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return v
}

func hx(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func u64(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("bad uint64 %q: %v", s, err)
	}
	return v
}

type vAddress struct {
	String     string   `json:"string"`
	Type       int      `json:"type"`
	IPv4Octets []byte   `json:"ipv4_octets"`
	IPv6Groups []uint16 `json:"ipv6_groups"`
	Port       uint16   `json:"port"`
}

// addr converts a vector address, checking that its fields agree with its
// text, and returns its wire form derived from the schema's description.
func (a vAddress) addr(t *testing.T) (netip.AddrPort, []byte) {
	t.Helper()
	parsed, err := netip.ParseAddrPort(a.String)
	if err != nil {
		t.Fatalf("address %q: %v", a.String, err)
	}
	wire := []byte{byte(a.Type)}
	var ip netip.Addr
	switch a.Type {
	case codec.AddressIPv4:
		if len(a.IPv4Octets) != 4 {
			t.Fatalf("address %q: %d octets", a.String, len(a.IPv4Octets))
		}
		ip = netip.AddrFrom4([4]byte(a.IPv4Octets))
		wire = append(wire, a.IPv4Octets...)
	case codec.AddressIPv6:
		if len(a.IPv6Groups) != 8 {
			t.Fatalf("address %q: %d groups", a.String, len(a.IPv6Groups))
		}
		var b [16]byte
		for i, g := range a.IPv6Groups {
			binary.BigEndian.PutUint16(b[2*i:], g)
			wire = binary.LittleEndian.AppendUint16(wire, g)
		}
		ip = netip.AddrFrom16(b)
	default:
		t.Fatalf("address %q: type %d", a.String, a.Type)
	}
	wire = binary.LittleEndian.AppendUint16(wire, a.Port)
	ap := netip.AddrPortFrom(ip, a.Port)
	if ap != parsed {
		t.Fatalf("address %q: fields give %v", a.String, ap)
	}
	return ap, wire
}

// checkAddresses checks the address codec both ways on each vector address.
func checkAddresses(t *testing.T, list []vAddress) []netip.AddrPort {
	t.Helper()
	out := make([]netip.AddrPort, len(list))
	for i, a := range list {
		ap, wire := a.addr(t)
		var buf [32]byte
		n, err := codec.WriteAddress(buf[:], ap)
		if err != nil || !bytes.Equal(buf[:n], wire) {
			t.Errorf("WriteAddress(%v) = %x, %v; want %x", ap, buf[:n], err, wire)
		}
		got, m, err := codec.ReadAddress(wire)
		if err != nil || got != ap || m != len(wire) {
			t.Errorf("ReadAddress(%x) = %v, %d, %v; want %v", wire, got, m, err, ap)
		}
		out[i] = ap
	}
	return out
}

func eq(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s:\n got %x\nwant %x", what, got, want)
	}
}

func checkPrivateTokens(t *testing.T, raw []byte) int {
	type vec struct {
		Name   string `json:"name"`
		Inputs struct {
			ClientID           string     `json:"client_id"`
			TimeoutSeconds     int32      `json:"timeout_seconds"`
			NumServerAddresses int        `json:"num_server_addresses"`
			ServerAddresses    []vAddress `json:"server_addresses"`
			ClientToServerKey  string     `json:"client_to_server_key"`
			ServerToClientKey  string     `json:"server_to_client_key"`
			UserData           string     `json:"user_data"`
			ProtocolID         string     `json:"protocol_id"`
			ExpireTimestamp    string     `json:"expire_timestamp"`
			Nonce              string     `json:"nonce"`
			PrivateKey         string     `json:"private_key"`
			VersionInfo        string     `json:"version_info"`
		} `json:"inputs"`
		AssociatedData string `json:"associated_data"`
		Plaintext      string `json:"plaintext"`
		Encrypted      string `json:"encrypted"`
	}
	file := mustDecode[struct {
		Vectors []vec `json:"vectors"`
	}](t, raw)
	for _, v := range file.Vectors {
		t.Run("private/"+v.Name, func(t *testing.T) {
			in := v.Inputs
			eq(t, "version info", codec.VersionInfo[:], hx(t, in.VersionInfo))
			addrs := checkAddresses(t, in.ServerAddresses)
			if len(addrs) != in.NumServerAddresses {
				t.Fatalf("num_server_addresses %d but %d listed", in.NumServerAddresses, len(addrs))
			}
			var tok codec.PrivateToken
			tok.ClientID = u64(t, in.ClientID)
			tok.TimeoutSeconds = in.TimeoutSeconds
			tok.NumServerAddresses = len(addrs)
			copy(tok.ServerAddresses[:], addrs)
			copy(tok.ClientToServerKey[:], hx(t, in.ClientToServerKey))
			copy(tok.ServerToClientKey[:], hx(t, in.ServerToClientKey))
			copy(tok.UserData[:], hx(t, in.UserData))
			protocolID, expire := u64(t, in.ProtocolID), u64(t, in.ExpireTimestamp)
			checkPrivateToken(t, &tok, protocolID, expire, hx(t, in.Nonce), hx(t, in.PrivateKey),
				hx(t, v.AssociatedData), hx(t, v.Plaintext), hx(t, v.Encrypted))
		})
	}
	return len(file.Vectors)
}

// checkPrivateToken checks write, seal, open and read of one private token.
func checkPrivateToken(t *testing.T, tok *codec.PrivateToken, protocolID, expire uint64, nonce, privateKey, ad, plaintext, encrypted []byte) {
	t.Helper()
	if ad != nil {
		var gotAD [codec.TokenAssociatedDataBytes]byte
		codec.PutTokenAssociatedData(gotAD[:], protocolID, expire)
		eq(t, "associated data", gotAD[:], ad)
	}
	buf := make([]byte, codec.PrivateTokenBytes)
	if err := codec.WritePrivateToken(buf, tok); err != nil {
		t.Fatalf("WritePrivateToken: %v", err)
	}
	eq(t, "private token plaintext", buf, plaintext)
	key, err := aead.NewTokenKey(privateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := key.SealPrivateToken(buf, protocolID, expire, nonce); err != nil {
		t.Fatal(err)
	}
	eq(t, "encrypted private token", buf, encrypted)

	buf = slices.Clone(encrypted)
	if err := key.OpenPrivateToken(buf, protocolID, expire, nonce); err != nil {
		t.Fatalf("OpenPrivateToken: %v", err)
	}
	eq(t, "decrypted private token", buf[:1008], plaintext[:1008])
	var got codec.PrivateToken
	if err := codec.ReadPrivateToken(buf, &got); err != nil {
		t.Fatalf("ReadPrivateToken: %v", err)
	}
	if got != *tok {
		t.Errorf("ReadPrivateToken:\n got %+v\nwant %+v", got, *tok)
	}
	// Any change to the authenticated inputs must fail.
	for _, bad := range []struct {
		name           string
		protocol, exp  uint64
		flipNonce, mac bool
	}{
		{"protocol id", protocolID + 1, expire, false, false},
		{"expire", protocolID, expire - 1, false, false},
		{"nonce", protocolID, expire, true, false},
		{"tag", protocolID, expire, false, true},
	} {
		b, n := slices.Clone(encrypted), slices.Clone(nonce)
		if bad.flipNonce {
			n[0] ^= 1
		}
		if bad.mac {
			b[len(b)-1] ^= 1
		}
		if key.OpenPrivateToken(b, bad.protocol, bad.exp, n) == nil {
			t.Errorf("OpenPrivateToken accepted a modified %s", bad.name)
		}
	}
}

func checkPublicTokens(t *testing.T, raw []byte) int {
	type vec struct {
		Name   string `json:"name"`
		Inputs struct {
			VersionInfo           string     `json:"version_info"`
			ProtocolID            string     `json:"protocol_id"`
			CreateTimestamp       string     `json:"create_timestamp"`
			ExpireTimestamp       string     `json:"expire_timestamp"`
			Nonce                 string     `json:"nonce"`
			TimeoutSeconds        int32      `json:"timeout_seconds"`
			PublicServerAddresses []vAddress `json:"public_server_addresses"`
			ClientToServerKey     string     `json:"client_to_server_key"`
			ServerToClientKey     string     `json:"server_to_client_key"`
			PrivateKey            string     `json:"private_key"`
			Private               struct {
				ClientID                string     `json:"client_id"`
				TimeoutSeconds          int32      `json:"timeout_seconds"`
				InternalServerAddresses []vAddress `json:"internal_server_addresses"`
				UserData                string     `json:"user_data"`
			} `json:"private"`
		} `json:"inputs"`
		PrivatePlaintext string `json:"private_plaintext"`
		PrivateEncrypted string `json:"private_encrypted"`
		Token            string `json:"token"`
	}
	file := mustDecode[struct {
		Vectors []vec `json:"vectors"`
	}](t, raw)
	for _, v := range file.Vectors {
		t.Run("public/"+v.Name, func(t *testing.T) {
			in := v.Inputs
			eq(t, "version info", codec.VersionInfo[:], hx(t, in.VersionInfo))
			protocolID, expire := u64(t, in.ProtocolID), u64(t, in.ExpireTimestamp)
			var priv codec.PrivateToken
			internal := checkAddresses(t, in.Private.InternalServerAddresses)
			priv.ClientID = u64(t, in.Private.ClientID)
			priv.TimeoutSeconds = in.Private.TimeoutSeconds
			priv.NumServerAddresses = len(internal)
			copy(priv.ServerAddresses[:], internal)
			copy(priv.ClientToServerKey[:], hx(t, in.ClientToServerKey))
			copy(priv.ServerToClientKey[:], hx(t, in.ServerToClientKey))
			copy(priv.UserData[:], hx(t, in.Private.UserData))
			nonce := hx(t, in.Nonce)
			encrypted := hx(t, v.PrivateEncrypted)
			checkPrivateToken(t, &priv, protocolID, expire, nonce, hx(t, in.PrivateKey), nil,
				hx(t, v.PrivatePlaintext), encrypted)

			public := checkAddresses(t, in.PublicServerAddresses)
			want := codec.ConnectToken{
				ProtocolID:         protocolID,
				CreateTimestamp:    u64(t, in.CreateTimestamp),
				ExpireTimestamp:    expire,
				TimeoutSeconds:     in.TimeoutSeconds,
				NumServerAddresses: len(public),
				ClientToServerKey:  priv.ClientToServerKey,
				ServerToClientKey:  priv.ServerToClientKey,
			}
			copy(want.Nonce[:], nonce)
			copy(want.PrivateData[:], encrypted)
			copy(want.ServerAddresses[:], public)
			buf := make([]byte, codec.ConnectTokenBytes)
			if err := codec.WriteConnectToken(buf, &want); err != nil {
				t.Fatalf("WriteConnectToken: %v", err)
			}
			token := hx(t, v.Token)
			eq(t, "connect token", buf, token)
			var got codec.ConnectToken
			if err := codec.ReadConnectToken(token, &got); err != nil {
				t.Fatalf("ReadConnectToken: %v", err)
			}
			if got != want {
				t.Errorf("ReadConnectToken:\n got %+v\nwant %+v", got, want)
			}
		})
	}
	return len(file.Vectors)
}

func checkChallengeTokens(t *testing.T, raw []byte) int {
	type vec struct {
		Name   string `json:"name"`
		Inputs struct {
			ClientID string `json:"client_id"`
			Sequence string `json:"sequence"`
			Key      string `json:"key"`
			UserData string `json:"user_data"`
		} `json:"inputs"`
		Nonce          string `json:"nonce"`
		AssociatedData string `json:"associated_data"`
		Plaintext      string `json:"plaintext"`
		Encrypted      string `json:"encrypted"`
	}
	file := mustDecode[struct {
		Vectors []vec `json:"vectors"`
	}](t, raw)
	for _, v := range file.Vectors {
		t.Run("challenge/"+v.Name, func(t *testing.T) {
			seq := u64(t, v.Inputs.Sequence)
			var nonce [12]byte
			codec.PutSequenceNonce(nonce[:], seq)
			eq(t, "nonce", nonce[:], hx(t, v.Nonce))
			if v.AssociatedData != "" {
				t.Fatalf("challenge tokens have no associated data, vector has %q", v.AssociatedData)
			}
			var tok codec.ChallengeToken
			tok.ClientID = u64(t, v.Inputs.ClientID)
			copy(tok.UserData[:], hx(t, v.Inputs.UserData))
			buf := make([]byte, codec.ChallengeTokenBytes)
			if err := codec.WriteChallengeToken(buf, &tok); err != nil {
				t.Fatal(err)
			}
			plaintext := hx(t, v.Plaintext)
			eq(t, "challenge plaintext", buf, plaintext)
			key, err := aead.NewChallengeKey(hx(t, v.Inputs.Key))
			if err != nil {
				t.Fatal(err)
			}
			if err := key.Seal(buf, seq); err != nil {
				t.Fatal(err)
			}
			encrypted := hx(t, v.Encrypted)
			eq(t, "encrypted challenge", buf, encrypted)
			buf = slices.Clone(encrypted)
			if err := key.Open(buf, seq); err != nil {
				t.Fatalf("Open: %v", err)
			}
			eq(t, "decrypted challenge", buf[:284], plaintext[:284])
			var got codec.ChallengeToken
			if err := codec.ReadChallengeToken(buf, &got); err != nil || got != tok {
				t.Errorf("ReadChallengeToken = %+v, %v; want %+v", got, err, tok)
			}
			if key.Open(slices.Clone(encrypted), seq+1) == nil {
				t.Errorf("challenge token opened with the wrong sequence")
			}
		})
	}
	return len(file.Vectors)
}

// packetFields are the per-type contents used by packets.json and
// read_packet.json.
type packetFields struct {
	VersionInfo                 string `json:"version_info"`
	ProtocolID                  string `json:"protocol_id"`
	ConnectTokenExpireTimestamp string `json:"connect_token_expire_timestamp"`
	ConnectTokenNonce           string `json:"connect_token_nonce"`
	ConnectTokenData            string `json:"connect_token_data"`
	ChallengeTokenSequence      string `json:"challenge_token_sequence"`
	ChallengeTokenData          string `json:"challenge_token_data"`
	ClientIndex                 uint32 `json:"client_index"`
	MaxClients                  uint32 `json:"max_clients"`
	PayloadBytes                int    `json:"payload_bytes"`
	Payload                     string `json:"payload"`
}

// recordingTokenKey stands in for the private key when a vector gives none:
// it accepts the token and records what the reader passed it.
type recordingTokenKey struct {
	protocolID, expire uint64
	nonce              []byte
}

func (k *recordingTokenKey) OpenPrivateToken(token []byte, protocolID, expire uint64, nonce []byte) error {
	k.protocolID, k.expire, k.nonce = protocolID, expire, slices.Clone(nonce)
	return nil
}

func checkPackets(t *testing.T, raw []byte) int {
	type vec struct {
		Name           string       `json:"name"`
		PacketType     int          `json:"packet_type"`
		Sequence       string       `json:"sequence"`
		ProtocolID     string       `json:"protocol_id"`
		Key            string       `json:"key"`
		Fields         packetFields `json:"fields"`
		Encrypted      bool         `json:"encrypted"`
		PrefixByte     *int         `json:"prefix_byte"`
		SequenceBytes  int          `json:"sequence_bytes"`
		AssociatedData string       `json:"associated_data"`
		Nonce          string       `json:"nonce"`
		BodyPlaintext  string       `json:"body_plaintext"`
		PacketBytes    int          `json:"packet_bytes"`
		Packet         string       `json:"packet"`
	}
	file := mustDecode[struct {
		Vectors []vec `json:"vectors"`
	}](t, raw)
	for _, v := range file.Vectors {
		t.Run("packet/"+v.Name, func(t *testing.T) {
			typ := codec.PacketType(v.PacketType)
			seq := u64(t, v.Sequence)
			protocolID := u64(t, v.ProtocolID)
			want := hx(t, v.Packet)
			if len(want) != v.PacketBytes {
				t.Fatalf("packet_bytes %d but packet has %d", v.PacketBytes, len(want))
			}
			if v.Encrypted != (typ != codec.ConnectionRequest) {
				t.Fatalf("encrypted=%v for type %d", v.Encrypted, typ)
			}
			f := v.Fields
			buf := make([]byte, codec.MaxPacketBytes)
			var key *aead.PacketKey
			if v.Encrypted {
				var err error
				if key, err = aead.NewPacketKey(hx(t, v.Key), protocolID); err != nil {
					t.Fatal(err)
				}
				if v.PrefixByte == nil || codec.PrefixByte(typ, seq) != byte(*v.PrefixByte) {
					t.Errorf("PrefixByte(%d, %d) = %#x, want %v", typ, seq, codec.PrefixByte(typ, seq), v.PrefixByte)
				}
				if got := codec.SequenceBytes(seq); got != v.SequenceBytes {
					t.Errorf("SequenceBytes(%d) = %d, want %d", seq, got, v.SequenceBytes)
				}
				var ad [codec.PacketAssociatedDataBytes]byte
				codec.PutPacketAssociatedData(ad[:], protocolID, codec.PrefixByte(typ, seq))
				eq(t, "associated data", ad[:], hx(t, v.AssociatedData))
				var nonce [12]byte
				codec.PutSequenceNonce(nonce[:], seq)
				eq(t, "nonce", nonce[:], hx(t, v.Nonce))
			}
			var n int
			var err error
			switch typ {
			case codec.ConnectionRequest:
				eq(t, "version info", codec.VersionInfo[:], hx(t, f.VersionInfo))
				n, err = codec.WriteRequestPacket(buf, u64(t, f.ProtocolID), u64(t, f.ConnectTokenExpireTimestamp),
					hx(t, f.ConnectTokenNonce), hx(t, f.ConnectTokenData))
			case codec.ConnectionDenied:
				n, err = codec.WriteDeniedPacket(buf, seq, key)
			case codec.ConnectionChallenge:
				n, err = codec.WriteChallengePacket(buf, seq, u64(t, f.ChallengeTokenSequence), hx(t, f.ChallengeTokenData), key)
			case codec.ConnectionResponse:
				n, err = codec.WriteResponsePacket(buf, seq, u64(t, f.ChallengeTokenSequence), hx(t, f.ChallengeTokenData), key)
			case codec.ConnectionKeepAlive:
				n, err = codec.WriteKeepAlivePacket(buf, seq, f.ClientIndex, f.MaxClients, key)
			case codec.ConnectionPayload:
				if len(hx(t, f.Payload)) != f.PayloadBytes {
					t.Fatalf("payload_bytes %d but payload has %d", f.PayloadBytes, len(hx(t, f.Payload)))
				}
				n, err = codec.WritePayloadPacket(buf, seq, hx(t, f.Payload), key)
			case codec.ConnectionDisconnect:
				n, err = codec.WriteDisconnectPacket(buf, seq, key)
			default:
				t.Fatalf("unknown packet type %d", typ)
			}
			if err != nil {
				t.Fatalf("write: %v", err)
			}
			eq(t, "packet", buf[:n], want)

			// Read it back with every role that accepts the type.
			for _, role := range []codec.Role{codec.RoleServer, codec.RoleClient} {
				pkt := slices.Clone(want)
				tk := &recordingTokenKey{}
				p := codec.ReadParams{Role: role, ProtocolID: protocolID, Key: key, TokenKey: tk}
				if typ == codec.ConnectionRequest {
					p.ProtocolID = u64(t, f.ProtocolID)
					p.Now = u64(t, f.ConnectTokenExpireTimestamp) - 1
				}
				var got codec.Packet
				err := codec.ReadPacket(pkt, &p, &got)
				if !role.Allows(typ) {
					if codec.ReasonOf(err) != codec.ReasonTypeNotAllowed {
						t.Errorf("%v read a %v: %v, want %v", role, typ, err, codec.ReasonTypeNotAllowed)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%v ReadPacket: %v", role, err)
				}
				if got.Type != typ {
					t.Errorf("type %v, want %v", got.Type, typ)
				}
				switch typ {
				case codec.ConnectionRequest:
					if got.ExpireTimestamp != u64(t, f.ConnectTokenExpireTimestamp) || tk.expire != got.ExpireTimestamp ||
						tk.protocolID != p.ProtocolID {
						t.Errorf("request expire %d (token key saw %d, protocol %d)", got.ExpireTimestamp, tk.expire, tk.protocolID)
					}
					eq(t, "request nonce", got.TokenNonce, hx(t, f.ConnectTokenNonce))
					eq(t, "nonce given to token key", tk.nonce, hx(t, f.ConnectTokenNonce))
					eq(t, "request token", got.PrivateToken, hx(t, f.ConnectTokenData))
					continue
				case codec.ConnectionChallenge, codec.ConnectionResponse:
					if got.ChallengeSequence != u64(t, f.ChallengeTokenSequence) {
						t.Errorf("challenge sequence %d", got.ChallengeSequence)
					}
					eq(t, "challenge token", got.ChallengeToken, hx(t, f.ChallengeTokenData))
				case codec.ConnectionKeepAlive:
					if got.ClientIndex != f.ClientIndex || got.MaxClients != f.MaxClients {
						t.Errorf("keep-alive %d/%d", got.ClientIndex, got.MaxClients)
					}
				case codec.ConnectionPayload:
					eq(t, "payload", got.Payload, hx(t, f.Payload))
				}
				if got.Sequence != seq {
					t.Errorf("sequence %d, want %d", got.Sequence, seq)
				}
				hdr := 1 + v.SequenceBytes
				eq(t, "decrypted body", pkt[hdr:len(pkt)-codec.MACBytes], hx(t, v.BodyPlaintext))
			}
		})
	}
	return len(file.Vectors)
}

func checkReadPacket(t *testing.T, raw []byte) int {
	type vec struct {
		Name             string `json:"name"`
		Role             string `json:"role"`
		AllowedTypes     []int  `json:"allowed_types"`
		ProtocolID       string `json:"protocol_id"`
		CurrentTimestamp string `json:"current_timestamp"`
		ReadKey          string `json:"read_key"`
		PrivateKey       string `json:"private_key"`
		PacketBytes      int    `json:"packet_bytes"`
		Packet           string `json:"packet"`
		Expect           string `json:"expect"`
		Decoded          *struct {
			PacketType int    `json:"packet_type"`
			Sequence   string `json:"sequence"`
			packetFields
			ConnectTokenExpireTimestamp string `json:"connect_token_expire_timestamp"`
			ConnectTokenNonce           string `json:"connect_token_nonce"`
			PrivateTokenReadable        *bool  `json:"private_token_readable"`
			DecryptedPrivateToken       string `json:"decrypted_private_token"`
		} `json:"decoded"`
	}
	file := mustDecode[struct {
		Vectors []vec `json:"vectors"`
	}](t, raw)
	for _, v := range file.Vectors {
		t.Run("read/"+v.Name, func(t *testing.T) {
			var role codec.Role
			switch v.Role {
			case "server":
				role = codec.RoleServer
			case "client":
				role = codec.RoleClient
			default:
				t.Fatalf("unknown role %q", v.Role)
			}
			for typ := codec.PacketType(0); typ < 16; typ++ {
				if role.Allows(typ) != slices.Contains(v.AllowedTypes, int(typ)) {
					t.Errorf("%v allows type %d: %v, vector says allowed %v", role, typ, role.Allows(typ), v.AllowedTypes)
				}
			}
			pkt := hx(t, v.Packet)
			if len(pkt) != v.PacketBytes {
				t.Fatalf("packet_bytes %d, packet has %d", v.PacketBytes, len(pkt))
			}
			protocolID := u64(t, v.ProtocolID)
			p := codec.ReadParams{Role: role, ProtocolID: protocolID, Now: u64(t, v.CurrentTimestamp)}
			if v.ReadKey != "" {
				k, err := aead.NewPacketKey(hx(t, v.ReadKey), protocolID)
				if err != nil {
					t.Fatal(err)
				}
				p.Key = k
			}
			if v.PrivateKey != "" {
				k, err := aead.NewTokenKey(hx(t, v.PrivateKey))
				if err != nil {
					t.Fatal(err)
				}
				p.TokenKey = k
			}
			var got codec.Packet
			err := codec.ReadPacket(pkt, &p, &got)
			switch v.Expect {
			case "reject":
				if err == nil {
					t.Fatalf("accepted a packet the reference rejects (%+v)", got)
				}
				if codec.ReasonOf(err) == codec.ReasonNone {
					t.Errorf("rejected without a drop reason: %v", err)
				}
				return
			case "accept":
				if err != nil {
					t.Fatalf("rejected a packet the reference accepts: %v", err)
				}
			default:
				t.Fatalf("unknown expect %q", v.Expect)
			}
			d := v.Decoded
			if d == nil {
				t.Fatal("accepted vector without decoded fields")
			}
			if got.Type != codec.PacketType(d.PacketType) {
				t.Fatalf("type %v, want %d", got.Type, d.PacketType)
			}
			switch got.Type {
			case codec.ConnectionRequest:
				if got.ExpireTimestamp != u64(t, d.ConnectTokenExpireTimestamp) {
					t.Errorf("expire %d", got.ExpireTimestamp)
				}
				eq(t, "nonce", got.TokenNonce, hx(t, d.ConnectTokenNonce))
				eq(t, "decrypted private token", got.PrivateToken[:1008], hx(t, d.DecryptedPrivateToken))
				var tok codec.PrivateToken
				readable := codec.ReadPrivateToken(got.PrivateToken, &tok) == nil
				if d.PrivateTokenReadable == nil || readable != *d.PrivateTokenReadable {
					t.Errorf("private token readable = %v, vector says %v", readable, d.PrivateTokenReadable)
				}
				return
			case codec.ConnectionChallenge, codec.ConnectionResponse:
				if got.ChallengeSequence != u64(t, d.ChallengeTokenSequence) {
					t.Errorf("challenge sequence %d", got.ChallengeSequence)
				}
				eq(t, "challenge token", got.ChallengeToken, hx(t, d.ChallengeTokenData))
			case codec.ConnectionKeepAlive:
				if got.ClientIndex != d.ClientIndex || got.MaxClients != d.MaxClients {
					t.Errorf("keep-alive %d/%d, want %d/%d", got.ClientIndex, got.MaxClients, d.ClientIndex, d.MaxClients)
				}
			case codec.ConnectionPayload:
				if len(got.Payload) != d.PayloadBytes {
					t.Errorf("payload %d bytes, want %d", len(got.Payload), d.PayloadBytes)
				}
				eq(t, "payload", got.Payload, hx(t, d.Payload))
			}
			if got.Sequence != u64(t, d.Sequence) {
				t.Errorf("sequence %d, want %s", got.Sequence, d.Sequence)
			}
		})
	}
	return len(file.Vectors)
}

func checkReplay(t *testing.T, raw []byte) int {
	type step struct {
		Sequence         string `json:"sequence"`
		Accept           bool   `json:"accept"`
		Reason           string `json:"reason"`
		MostRecentBefore string `json:"most_recent_before"`
		MostRecentAfter  string `json:"most_recent_after"`
	}
	file := mustDecode[struct {
		BufferSize int `json:"buffer_size"`
		Scripts    []struct {
			Name  string `json:"name"`
			Steps []step `json:"steps"`
		} `json:"scripts"`
	}](t, raw)
	if file.BufferSize != ring.ReplayWindowSize {
		t.Fatalf("buffer_size %d, ours is %d", file.BufferSize, ring.ReplayWindowSize)
	}
	for _, s := range file.Scripts {
		t.Run("replay/"+s.Name, func(t *testing.T) {
			if len(s.Steps) == 0 {
				t.Fatal("script has no steps")
			}
			var r ring.Replay
			r.Reset()
			for i, st := range s.Steps {
				where := fmt.Sprintf("step %d (sequence %s, %s)", i, st.Sequence, st.Reason)
				seq := u64(t, st.Sequence)
				if r.MostRecent() != u64(t, st.MostRecentBefore) {
					t.Fatalf("%s: most recent before %d, want %s", where, r.MostRecent(), st.MostRecentBefore)
				}
				accept := !r.AlreadyReceived(seq)
				if accept != st.Accept {
					t.Fatalf("%s: accept %v, want %v", where, accept, st.Accept)
				}
				if accept {
					r.Advance(seq)
				}
				if r.MostRecent() != u64(t, st.MostRecentAfter) {
					t.Fatalf("%s: most recent after %d, want %s", where, r.MostRecent(), st.MostRecentAfter)
				}
			}
		})
	}
	return len(file.Scripts)
}

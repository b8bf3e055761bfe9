package codec_test

import (
	"bytes"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/ring"
)

func TestSequenceBytes(t *testing.T) {
	for _, c := range []struct {
		seq  uint64
		want int
	}{
		{0, 1}, {1, 1}, {255, 1}, {256, 2}, {1000, 2}, {1<<16 - 1, 2}, {1 << 16, 3},
		{1<<32 + 5, 5}, {1 << 56, 8}, {1<<64 - 1, 8},
	} {
		if got := codec.SequenceBytes(c.seq); got != c.want {
			t.Errorf("SequenceBytes(%d) = %d, want %d", c.seq, got, c.want)
		}
		if got := codec.HeaderBytes(c.seq); got != c.want+1 {
			t.Errorf("HeaderBytes(%d) = %d", c.seq, got)
		}
	}
}

func TestAddressWireForm(t *testing.T) {
	for _, c := range []struct {
		addr string
		wire []byte
	}{
		{"1.2.3.4:258", []byte{1, 1, 2, 3, 4, 2, 1}},
		{"[2001:db8::1]:1", []byte{2, 0x01, 0x20, 0xb8, 0x0d, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0}},
		// IPv4-mapped IPv6 stays IPv6 (type 2), as the reference parses it.
		{"[::ffff:1.2.3.4]:7", []byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 2, 1, 4, 3, 7, 0}},
	} {
		a := netip.MustParseAddrPort(c.addr)
		var buf [32]byte
		n, err := codec.WriteAddress(buf[:], a)
		if err != nil || !bytes.Equal(buf[:n], c.wire) || n != codec.AddressBytes(a) {
			t.Errorf("WriteAddress(%s) = %x, %v; want %x", c.addr, buf[:n], err, c.wire)
		}
		got, m, err := codec.ReadAddress(c.wire)
		if err != nil || got != a || m != len(c.wire) {
			t.Errorf("ReadAddress(%x) = %v, %d, %v", c.wire, got, m, err)
		}
		if _, _, err := codec.ReadAddress(c.wire[:len(c.wire)-1]); codec.ReasonOf(err) != codec.ReasonTokenUnreadable {
			t.Errorf("truncated %s: %v", c.addr, err)
		}
	}
	for _, typ := range []byte{0, 3, 255} {
		if _, _, err := codec.ReadAddress([]byte{typ, 1, 2, 3, 4, 5, 6}); codec.ReasonOf(err) != codec.ReasonAddressType {
			t.Errorf("address type %d: %v, want %v", typ, err, codec.ReasonAddressType)
		}
	}
}

// TestWriterArgumentErrors: bad arguments to public writers return errors
// that say what is allowed, and never panic.
func TestWriterArgumentErrors(t *testing.T) {
	key, err := aead.NewPacketKey(bytes.Repeat([]byte{1}, 32), 1)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, codec.MaxPacketBytes)
	tooMany := make([]netip.AddrPort, 33)
	for i := range tooMany {
		tooMany[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), 1)
	}
	private := func(addrs []netip.AddrPort, n int) error {
		var tok codec.PrivateToken
		copy(tok.ServerAddresses[:], addrs)
		tok.NumServerAddresses = n
		return codec.WritePrivateToken(make([]byte, 1024), &tok)
	}
	public := func(addrs []netip.AddrPort, n int) error {
		var tok codec.ConnectToken
		copy(tok.ServerAddresses[:], addrs)
		tok.NumServerAddresses = n
		return codec.WriteConnectToken(make([]byte, 2048), &tok)
	}
	var nilKey *aead.PacketKey
	for _, c := range []struct {
		name string
		err  error
		want error
		says string
	}{
		{"33 addresses private", private(tooMany, 33), codec.ErrAddressCount, "between 1 and 32"},
		{"33 addresses public", public(tooMany, 33), codec.ErrAddressCount, "between 1 and 32"},
		{"0 addresses", private(nil, 0), codec.ErrAddressCount, "between 1 and 32"},
		{"zero address", private(make([]netip.AddrPort, 1), 1), codec.ErrAddressInvalid, "IPv4 or IPv6"},
		{"zoned address", private([]netip.AddrPort{netip.MustParseAddrPort("[fe80::1%eth0]:1")}, 1), codec.ErrAddressZone, "zone"},
		{"empty payload", second(codec.WritePayloadPacket(buf, 1, nil, key)), codec.ErrPayloadSize, "1 to 1200"},
		{"1201-byte payload", second(codec.WritePayloadPacket(buf, 1, make([]byte, 1201), key)), codec.ErrPayloadSize, "1 to 1200"},
		{"small buffer", second(codec.WritePayloadPacket(buf[:20], 1, make([]byte, 10), key)), codec.ErrBufferTooSmall, "too small"},
		{"small token buffer", codec.WritePrivateToken(make([]byte, 100), &codec.PrivateToken{NumServerAddresses: 1, ServerAddresses: [32]netip.AddrPort{netip.MustParseAddrPort("1.1.1.1:1")}}), codec.ErrBufferTooSmall, "too small"},
		{"nil key", second(codec.WriteKeepAlivePacket(buf, 1, 0, 1, nil)), nil, "nil key"},
		{"typed nil key", second(codec.WriteKeepAlivePacket(buf, 1, 0, 1, nilKey)), aead.ErrNilKey, "nil key"},
		{"request nonce", second(codec.WriteRequestPacket(buf, 1, 2, make([]byte, 23), make([]byte, 1024))), codec.ErrNonceSize, "24 bytes"},
		{"request token", second(codec.WriteRequestPacket(buf, 1, 2, make([]byte, 24), make([]byte, 1000))), codec.ErrTokenSize, "1024 bytes"},
		{"challenge size", second(codec.WriteChallengePacket(buf, 1, 2, make([]byte, 299), key)), codec.ErrChallengeSize, "300 bytes"},
		{"write zero address", second(codec.WriteAddress(buf, netip.AddrPort{})), codec.ErrAddressInvalid, "IPv4 or IPv6"},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if c.want != nil && !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
		if !strings.Contains(c.err.Error(), c.says) {
			t.Errorf("%s: %q does not say %q", c.name, c.err, c.says)
		}
	}
}

func second(_ int, err error) error { return err }

// TestReadPacketCheckOrder crafts packets that fail two checks at once and
// asserts the earlier check in the standard's order is the one reported.
func TestReadPacketCheckOrder(t *testing.T) {
	key, _ := aead.NewPacketKey(bytes.Repeat([]byte{1}, 32), 9)
	tokenKey, _ := aead.NewTokenKey(bytes.Repeat([]byte{2}, 32))
	valid := func(typ codec.PacketType, seq uint64) []byte {
		buf := make([]byte, codec.MaxPacketBytes)
		var n int
		switch typ {
		case codec.ConnectionKeepAlive:
			n, _ = codec.WriteKeepAlivePacket(buf, seq, 1, 2, key)
		case codec.ConnectionPayload:
			n, _ = codec.WritePayloadPacket(buf, seq, []byte("abc"), key)
		case codec.ConnectionChallenge:
			n, _ = codec.WriteChallengePacket(buf, seq, 1, make([]byte, 300), key)
		}
		return buf[:n]
	}
	var tok codec.PrivateToken
	tok.NumServerAddresses = 1
	tok.ServerAddresses[0] = netip.MustParseAddrPort("127.0.0.1:1")
	priv := make([]byte, 1024)
	_ = codec.WritePrivateToken(priv, &tok)
	nonce := make([]byte, 24)
	_ = tokenKey.SealPrivateToken(priv, 9, 100, nonce)
	request := make([]byte, codec.RequestPacketBytes)
	_, _ = codec.WriteRequestPacket(request, 9, 100, nonce, priv)
	mod := func(b []byte, f func([]byte) []byte) []byte { return f(slices.Clone(b)) }

	for _, c := range []struct {
		name   string
		role   codec.Role
		pkt    []byte
		now    uint64
		replay []uint64 // sequences already received
		want   codec.DropReason
	}{
		{"empty", codec.RoleServer, nil, 0, nil, codec.ReasonTooSmall},
		{"17 bytes with type 7", codec.RoleServer, mod(valid(codec.ConnectionKeepAlive, 1)[:17], func(b []byte) []byte { b[0] = 0x17; return b }), 0, nil, codec.ReasonTooSmall},
		{"type 7 before role", codec.RoleServer, mod(valid(codec.ConnectionKeepAlive, 1), func(b []byte) []byte { b[0] = 0x07; return b }), 0, nil, codec.ReasonInvalidType},
		{"role before sequence bytes", codec.RoleServer, mod(valid(codec.ConnectionChallenge, 1), func(b []byte) []byte { b[0] = 0x02; return b }), 0, nil, codec.ReasonTypeNotAllowed},
		{"sequence bytes 9", codec.RoleServer, mod(valid(codec.ConnectionKeepAlive, 1), func(b []byte) []byte { b[0] = 0x94; return b }), 0, nil, codec.ReasonSequenceBytes},
		{"no room for sequence and tag", codec.RoleServer, mod(valid(codec.ConnectionKeepAlive, 1)[:24], func(b []byte) []byte { b[0] = 0x84; return b }), 0, nil, codec.ReasonTruncated},
		{"size before replay", codec.RoleServer, valid(codec.ConnectionKeepAlive, 5)[:25], 0, []uint64{5}, codec.ReasonBodySize},
		{"replay before decrypt", codec.RoleServer, mod(valid(codec.ConnectionPayload, 5), func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), 0, []uint64{5}, codec.ReasonReplayed},
		{"too old", codec.RoleClient, valid(codec.ConnectionPayload, 5), 0, []uint64{1000}, codec.ReasonReplayed},
		{"decrypt", codec.RoleClient, mod(valid(codec.ConnectionPayload, 5), func(b []byte) []byte { b[3] ^= 1; return b }), 0, nil, codec.ReasonDecrypt},
		{"request on client", codec.RoleClient, request, 0, nil, codec.ReasonTypeNotAllowed},
		{"request size before version", codec.RoleServer, mod(request[:1077], func(b []byte) []byte { b[1] = 'X'; return b }), 0, nil, codec.ReasonRequestSize},
		{"version before protocol", codec.RoleServer, mod(request, func(b []byte) []byte { b[12] = '1'; b[14] ^= 1; return b }), 0, nil, codec.ReasonVersion},
		{"protocol before expiry", codec.RoleServer, mod(request, func(b []byte) []byte { b[14] ^= 1; return b }), 200, nil, codec.ReasonProtocolID},
		{"expiry equal to now", codec.RoleServer, request, 100, nil, codec.ReasonTokenExpired},
		{"expiry before token", codec.RoleServer, mod(request, func(b []byte) []byte { b[100] ^= 1; return b }), 100, nil, codec.ReasonTokenExpired},
		{"token decrypt", codec.RoleServer, mod(request, func(b []byte) []byte { b[100] ^= 1; return b }), 99, nil, codec.ReasonTokenDecrypt},
	} {
		var replay ring.Replay
		replay.Reset()
		for _, s := range c.replay {
			replay.Advance(s)
		}
		p := codec.ReadParams{Role: c.role, ProtocolID: 9, Now: c.now, Key: key, TokenKey: tokenKey, Replay: &replay}
		var out codec.Packet
		err := codec.ReadPacket(c.pkt, &p, &out)
		if got := codec.ReasonOf(err); got != c.want {
			t.Errorf("%s: %v (%v), want %v", c.name, got, err, c.want)
		}
		if len(c.pkt) > 0 && c.pkt[0] == 0 {
			// CheckRequestPacket stops where decryption would begin.
			want := c.want
			if want == codec.ReasonTokenDecrypt {
				want = codec.ReasonNone
			}
			if got := codec.ReasonOf(codec.CheckRequestPacket(c.pkt, &p)); got != want {
				t.Errorf("%s: CheckRequestPacket %v, want %v", c.name, got, want)
			}
		}
	}
	p := codec.ReadParams{Role: codec.RoleServer, ProtocolID: 9, Now: 99, TokenKey: tokenKey}
	if err := codec.CheckRequestPacket(request, &p); err != nil {
		t.Errorf("valid request: %v", err)
	}
	if got := codec.ReasonOf(codec.CheckRequestPacket(valid(codec.ConnectionKeepAlive, 1), &p)); got != codec.ReasonRequestSize {
		t.Errorf("keep-alive as a request: %v, want %v", got, codec.ReasonRequestSize)
	}
	p.TokenKey = nil
	if got := codec.ReasonOf(codec.CheckRequestPacket(request, &p)); got != codec.ReasonNoKey {
		t.Errorf("no token key: %v, want %v", got, codec.ReasonNoKey)
	}
}

// A packet that fails to decrypt must not move the replay window: otherwise
// a forged high sequence would make every real packet look old.
func TestForgedPacketDoesNotAdvanceReplay(t *testing.T) {
	key, _ := aead.NewPacketKey(bytes.Repeat([]byte{1}, 32), 9)
	var replay ring.Replay
	replay.Reset()
	p := codec.ReadParams{Role: codec.RoleServer, ProtocolID: 9, Key: key, Replay: &replay}
	buf := make([]byte, codec.MaxPacketBytes)
	n, _ := codec.WritePayloadPacket(buf, 1<<40, []byte("x"), key)
	buf[n-1] ^= 1
	var out codec.Packet
	if codec.ReasonOf(codec.ReadPacket(buf[:n], &p, &out)) != codec.ReasonDecrypt {
		t.Fatal("forged packet not rejected as undecryptable")
	}
	if replay.MostRecent() != 0 {
		t.Fatalf("forged packet advanced the window to %d", replay.MostRecent())
	}
	n, _ = codec.WritePayloadPacket(buf, 2, []byte("y"), key)
	if err := codec.ReadPacket(buf[:n], &p, &out); err != nil || string(out.Payload) != "y" {
		t.Fatalf("genuine packet after forgery: %v", err)
	}
}

// TestReadPacketNeverPanics feeds every prefix byte with every length up to
// 1300 bytes to both roles.
func TestReadPacketNeverPanics(t *testing.T) {
	key, _ := aead.NewPacketKey(bytes.Repeat([]byte{1}, 32), 9)
	tokenKey, _ := aead.NewTokenKey(bytes.Repeat([]byte{2}, 32))
	buf := make([]byte, codec.MaxPacketBytes)
	var replay ring.Replay
	replay.Reset()
	var out codec.Packet
	for _, role := range []codec.Role{codec.RoleServer, codec.RoleClient} {
		p := codec.ReadParams{Role: role, ProtocolID: 9, Key: key, TokenKey: tokenKey, Replay: &replay}
		for prefix := range 256 {
			for n := 0; n <= codec.MaxPacketBytes; n++ {
				for i := range buf[:n] {
					buf[i] = byte(i * 31)
				}
				if n > 0 {
					buf[0] = byte(prefix)
				}
				if err := codec.ReadPacket(buf[:n], &p, &out); err == nil {
					t.Fatalf("%v accepted garbage prefix %#x length %d", role, prefix, n)
				}
			}
		}
	}
}

func TestDropReasonText(t *testing.T) {
	seen := map[string]bool{}
	for r := codec.DropReason(0); r < codec.NumDropReasons; r++ {
		s := r.String()
		if s == "" || seen[s] {
			t.Errorf("reason %d has an empty or duplicate description %q", r, s)
		}
		seen[s] = true
	}
	if codec.ReasonOf(nil) != codec.ReasonNone || codec.ReasonOf(errors.New("x")) != codec.ReasonNone {
		t.Error("ReasonOf of a non-reason error is not ReasonNone")
	}
}

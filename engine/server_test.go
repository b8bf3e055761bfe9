package engine

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
)

// Connection request and response rules, one test per rule, in the
// standard's order. Each asserts the counter of the rule's own drop reason,
// so removing the check makes the test fail even when a later check would
// also have stopped the packet.

func (p *srvPeer) expectNothing(what string) {
	p.h.t.Helper()
	if got := p.received(); len(got) != 0 {
		p.h.t.Fatalf("%s: server replied %v; want no reply", what, srvTypes(got))
	}
}

func TestServerDropsWrongSize(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	p := h.peer("192.0.2.1:5000", 1, nil)
	req := p.request()
	p.send(req[:len(req)-1])
	p.send(append(req, 0))
	p.expectNothing("request of the wrong size")
	if got := h.codecDrops(codec.ReasonRequestSize); got != 2 {
		t.Fatalf("ReasonRequestSize drops = %d, want 2", got)
	}
	p.send([]byte{0x15, 1, 2, 3}) // encrypted payload type, far too small
	if got := h.codecDrops(codec.ReasonTooSmall); got != 1 {
		t.Fatalf("ReasonTooSmall drops = %d, want 1", got)
	}
	p.challenged() // the intact request still works
}

func TestServerDropsWrongVersion(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	p := h.peer("192.0.2.1:5000", 1, nil)
	req := p.request()
	req[1+11] = '1' // "NETCODE 1.01"
	p.send(req)
	p.expectNothing("request with version 1.01")
	if got := h.codecDrops(codec.ReasonVersion); got != 1 {
		t.Fatalf("ReasonVersion drops = %d, want 1", got)
	}
}

func TestServerDropsWrongProtocolID(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	p := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.ProtocolID = srvProtocol + 1 })
	p.send(p.request())
	p.expectNothing("request for another protocol id")
	if got := h.codecDrops(codec.ReasonProtocolID); got != 1 {
		t.Fatalf("ReasonProtocolID drops = %d, want 1", got)
	}
}

func TestServerDropsExpiredToken(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	p := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.ExpireSeconds = 30; tp.TimeoutSeconds = 60 })
	h.now = h.now.Add(29 * time.Second)
	p.challenged() // expire timestamp > now: accepted
	h.now = h.now.Add(time.Second)
	p.send(p.request()) // expire timestamp == now: expired
	p.expectNothing("request with an expired token")
	if got := h.codecDrops(codec.ReasonTokenExpired); got != 1 {
		t.Fatalf("ReasonTokenExpired drops = %d, want 1", got)
	}
}

func TestServerDropsTokenThatDoesNotDecrypt(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	p := h.peer("192.0.2.1:5000", 1, nil)
	req := p.request()
	req[len(req)-100] ^= 1
	p.send(req)
	p.expectNothing("request with a corrupted token")
	other := h.peer("192.0.2.2:5000", 2, func(tp *TokenParams) { tp.PrivateKey = make([]byte, 32) })
	other.send(other.request())
	other.expectNothing("request with a token for another private key")
	if got := h.codecDrops(codec.ReasonTokenDecrypt); got != 2 {
		t.Fatalf("ReasonTokenDecrypt drops = %d, want 2", got)
	}
}

// srvRawTokenRequest seals a hand-written private token plaintext into a
// request, for contents the codec's writer refuses to produce.
func srvRawTokenRequest(t *testing.T, plain []byte, expire uint64) []byte {
	t.Helper()
	var tok [codec.PrivateTokenBytes]byte
	copy(tok[:], plain)
	nonce := make([]byte, codec.ConnectTokenNonceBytes)
	key, err := aead.NewTokenKey(testPrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := key.SealPrivateToken(tok[:], srvProtocol, expire, nonce); err != nil {
		t.Fatal(err)
	}
	req := make([]byte, codec.RequestPacketBytes)
	if _, err := codec.WriteRequestPacket(req, srvProtocol, expire, nonce, tok[:]); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestServerDropsUnreadableToken(t *testing.T) {
	for _, c := range []struct {
		name   string
		plain  func() []byte
		reason codec.DropReason
	}{
		{"zero addresses", func() []byte {
			b := make([]byte, 16)
			binary.LittleEndian.PutUint64(b, 1) // client id, timeout 0, 0 addresses
			return b
		}, codec.ReasonAddressCount},
		{"address type 3", func() []byte {
			b := make([]byte, 17)
			binary.LittleEndian.PutUint32(b[12:], 1)
			b[16] = 3
			return b
		}, codec.ReasonAddressType},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newSrvHarness(t, ServerConfig{})
			from := netip.MustParseAddrPort("192.0.2.1:5000")
			h.deliver(0, from, srvRawTokenRequest(t, c.plain(), uint64(h.now.Unix())+30))
			if got := h.sent(0, from); len(got) != 0 {
				t.Fatalf("server replied to an unreadable token")
			}
			if got := h.codecDrops(c.reason); got != 1 {
				t.Fatalf("%v drops = %d, want 1", c.reason, got)
			}
		})
	}
}

func TestServerDropsOwnAddressNotInToken(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	other := netip.MustParseAddrPort("10.0.0.2:40000")
	p := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.PublicAddresses = []netip.AddrPort{other} })
	p.send(p.request())
	p.expectNothing("request whose token names another server")
	if got := h.drops(ServerDropNotInToken); got != 1 {
		t.Fatalf("ServerDropNotInToken = %d, want 1", got)
	}
	// Behind NAT the client dials a public address and the token's internal
	// address is the server's own: accepted.
	nat := h.peer("192.0.2.2:5000", 2, func(tp *TokenParams) {
		tp.PublicAddresses = []netip.AddrPort{netip.MustParseAddrPort("203.0.113.7:30000")}
		tp.InternalAddresses = []netip.AddrPort{srvAddr}
	})
	nat.challenged()
}

func TestServerDropsAddressAlreadyConnected(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	a.connect()
	b := h.peer("192.0.2.1:5000", 2, nil) // same address, another client and token
	b.send(b.request())
	if got := h.drops(ServerDropAddressConnected); got != 1 {
		t.Fatalf("ServerDropAddressConnected = %d, want 1", got)
	}
	if got := h.sent(0, b.addr); len(got) != 0 {
		t.Fatalf("server answered a request from a connected address")
	}
}

func TestServerDropsClientIDAlreadyConnected(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	h.peer("192.0.2.1:5000", 7, nil).connect()
	b := h.peer("192.0.2.2:5000", 7, nil)
	b.send(b.request())
	b.expectNothing("request for a connected client id")
	if got := h.drops(ServerDropClientIDConnected); got != 1 {
		t.Fatalf("ServerDropClientIDConnected = %d, want 1", got)
	}
}

func TestServerDropsTokenReusedFromOtherAddress(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	a.challenged()
	thief := h.peerWithToken("198.51.100.9:6000", a.token)
	thief.send(thief.request())
	thief.expectNothing("token replayed from another address")
	if got := h.drops(ServerDropTokenOtherAddress); got != 1 {
		t.Fatalf("ServerDropTokenOtherAddress = %d, want 1", got)
	}
}

func TestServerAcceptsTokenResentFromSameAddress(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	a.challenged()
	first := a.challengeSeq
	a.challenged() // the client repeats its request at 10 Hz
	if a.challengeSeq == first {
		t.Fatalf("second challenge reused challenge sequence %d", first)
	}
	if got := h.drops(ServerDropTokenOtherAddress); got != 0 {
		t.Fatalf("ServerDropTokenOtherAddress = %d for the same address", got)
	}
	a.send(a.response())
	if !h.s.slotConnected(a.index) {
		t.Fatal("client not connected after answering the latest challenge")
	}
}

func TestServerFullDeniesRequest(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{MaxClients: 1})
	h.peer("192.0.2.1:5000", 1, nil).connect()
	b := h.peer("192.0.2.2:5000", 2, nil)
	req := b.request()
	h.deliver(0, b.addr, req)
	raw := h.sent(0, b.addr)
	if len(raw) != 1 {
		t.Fatalf("full server sent %d packets, want one denied", len(raw))
	}
	pkt, err := b.decode(raw[0])
	if err != nil || pkt.Type != codec.ConnectionDenied {
		t.Fatalf("reply %v, %v; want a denied packet sealed with the token's server-to-client key", pkt.Type, err)
	}
	if pkt.Sequence < 1<<63 {
		t.Fatalf("denied packet sequence %d; want the global sequence (>= 2^63)", pkt.Sequence)
	}
	if len(raw[0]) >= len(req) {
		t.Fatalf("denied packet %d bytes >= request %d bytes", len(raw[0]), len(req))
	}
	if st := h.s.Stats(); st.DeniedSent != 1 || st.ChallengesSent != 1 {
		t.Fatalf("DeniedSent %d ChallengesSent %d; want 1, 1", st.DeniedSent, st.ChallengesSent)
	}
}

func TestServerDropsWhenMappingTableFull(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{MaxEncryptionMappings: 1})
	a := h.peer("192.0.2.1:5000", 1, nil) // token timeout 5 s
	a.challenged()
	b := h.peer("192.0.2.2:5000", 2, nil)
	b.send(b.request())
	b.expectNothing("request while the mapping table is full")
	if got := h.drops(ServerDropMappingTableFull); got != 1 {
		t.Fatalf("ServerDropMappingTableFull = %d, want 1", got)
	}
	a.challenged() // a's repeated request reuses its mapping
	// Once a's mapping times out, there is room for b.
	h.step(5 * time.Second)
	b.challenged()
}

func TestServerDropsResponseThatDoesNotDecrypt(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	a.challenged()
	good := a.challenge
	a.challenge[20] ^= 1
	a.send(a.response())
	a.challenge = good
	a.challengeSeq++ // the right token with the wrong nonce
	a.send(a.response())
	a.expectNothing("responses with a bad challenge token")
	if got := h.drops(ServerDropChallengeDecrypt); got != 2 {
		t.Fatalf("ServerDropChallengeDecrypt = %d, want 2", got)
	}
	if h.s.NumConnectedClients() != 0 {
		t.Fatal("a bad challenge token connected a client")
	}
	// A response from an address without an encryption mapping has no key.
	stranger := h.peerWithToken("192.0.2.9:5000", a.token)
	stranger.challenge, stranger.challengeSeq = good, a.challengeSeq-1
	stranger.send(stranger.response())
	if got := h.codecDrops(codec.ReasonNoKey); got != 1 {
		t.Fatalf("ReasonNoKey = %d, want 1 for a response without a mapping", got)
	}
}

func TestServerDropsResponseFromConnectedAddress(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	a.connect()
	b := h.peer("192.0.2.2:5000", 2, nil)
	b.challenged()
	// a answers b's challenge (client id 2) from its connected address.
	a.challenge, a.challengeSeq = b.challenge, b.challengeSeq
	a.send(a.response())
	if got := h.drops(ServerDropAddressConnected); got != 1 {
		t.Fatalf("ServerDropAddressConnected = %d, want 1", got)
	}
	if h.s.NumConnectedClients() != 1 {
		t.Fatalf("%d clients connected, want 1", h.s.NumConnectedClients())
	}
}

func TestServerDropsResponseFromConnectedClientID(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 7, nil)
	b := h.peer("192.0.2.2:5000", 7, nil) // another token for the same client id
	a.challenged()
	b.challenged()
	srvExpectTypes(t, "a's response", a.send(a.response()), codec.ConnectionKeepAlive)
	b.send(b.response())
	b.expectNothing("response for a connected client id")
	if got := h.drops(ServerDropClientIDConnected); got != 1 {
		t.Fatalf("ServerDropClientIDConnected = %d, want 1", got)
	}
}

func TestServerFullAtResponseDenies(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{MaxClients: 1})
	a := h.peer("192.0.2.1:5000", 1, nil)
	b := h.peer("192.0.2.2:5000", 2, nil)
	a.challenged()
	b.challenged()
	a.send(a.response())
	resp := b.response()
	h.deliver(0, b.addr, resp)
	raw := h.sent(0, b.addr)
	if len(raw) != 1 {
		t.Fatalf("got %d packets, want one denied", len(raw))
	}
	if pkt, err := b.decode(raw[0]); err != nil || pkt.Type != codec.ConnectionDenied || pkt.Sequence < 1<<63 {
		t.Fatalf("reply %v seq %d err %v; want denied with a global sequence", pkt.Type, pkt.Sequence, err)
	}
	if len(raw[0]) >= len(resp) {
		t.Fatalf("denied %d bytes >= response %d bytes", len(raw[0]), len(resp))
	}
}

// TestServerRepliesSmallerThanRequests checks the anti-amplification rule:
// every packet the server sends to an address that has not completed the
// handshake (challenge, denied) is smaller than the packet that caused it,
// and carries the global sequence.
func TestServerRepliesSmallerThanRequests(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{MaxClients: 1})
	a := h.peer("192.0.2.1:5000", 1, nil)
	b := h.peer("192.0.2.2:5000", 2, nil)
	c := h.peer("192.0.2.3:5000", 3, nil)
	check := func(p *srvPeer, cause []byte, want codec.PacketType) {
		t.Helper()
		h.deliver(0, p.addr, cause)
		raw := h.sent(0, p.addr)
		if len(raw) != 1 {
			t.Fatalf("got %d replies, want one %v", len(raw), want)
		}
		pkt, err := p.decode(raw[0])
		if err != nil || pkt.Type != want {
			t.Fatalf("reply %v, %v; want %v", pkt.Type, err, want)
		}
		if len(raw[0]) >= len(cause) {
			t.Fatalf("%v of %d bytes answers %d bytes", want, len(raw[0]), len(cause))
		}
		if srvSequence(raw[0]) < 1<<63 || int(raw[0][0]>>4) != 8 {
			t.Fatalf("%v sent with sequence %d; want the global sequence", want, srvSequence(raw[0]))
		}
	}
	check(a, a.request(), codec.ConnectionChallenge)
	check(b, b.request(), codec.ConnectionChallenge)
	srvExpectTypes(t, "a's response", a.send(a.response()), codec.ConnectionKeepAlive)
	check(b, b.response(), codec.ConnectionDenied) // full at response
	check(c, c.request(), codec.ConnectionDenied)  // full at request
}

package engine

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

// Adversarial tests: an attacker who can record, replay, forge and spoof
// datagrams must not change what the server thinks of its clients. Each
// test checks the drop counter of the defence it exercises and that the
// victim's slot (index, id, address, queue) is untouched.

// advLink runs a real Client against the harness's server and records
// every datagram the client sent, as an on-path attacker would.
type advLink struct {
	t        *testing.T
	h        *srvHarness
	c        *Client
	conn     *batchiotest.Conn
	local    netip.AddrPort
	captured []batchiotest.Datagram // what the client sent, from local
}

func advNewLink(t *testing.T, h *srvHarness, local string) *advLink {
	t.Helper()
	conn := batchiotest.NewConn(netip.MustParseAddrPort(local))
	c, err := NewClient(ClientConfig{}, conn)
	if err != nil {
		t.Fatal(err)
	}
	return &advLink{t: t, h: h, c: c, conn: conn, local: conn.LocalAddr()}
}

// step advances the clock by d, runs the client, delivers what it sent to
// the server, runs the server and delivers the replies to the client (read
// at the next step).
func (l *advLink) step(d time.Duration) {
	l.h.now = l.h.now.Add(d)
	l.c.Update(l.h.now)
	l.pump()
}

func (l *advLink) pump() {
	for _, d := range l.conn.Sent() {
		l.captured = append(l.captured, batchiotest.Datagram{Data: d.Data, Addr: l.local})
		l.h.conns[0].Push(l.local, d.Data)
	}
	l.h.update()
	for _, raw := range l.h.sent(0, l.local) {
		l.conn.Push(l.h.conns[0].LocalAddr(), raw)
	}
}

// connect connects the client with token and returns its slot.
func (l *advLink) connect(token []byte) int {
	l.t.Helper()
	if err := l.c.Connect(token, l.h.now); err != nil {
		l.t.Fatal(err)
	}
	for range 100 {
		if l.c.State() == Connected {
			break
		}
		l.step(10 * time.Millisecond)
	}
	if l.c.State() != Connected {
		l.t.Fatalf("client state %v, want connected", l.c.State())
	}
	i := l.c.ClientIndex()
	if l.h.s.slotAddr(i) != l.local {
		l.t.Fatalf("slot %d holds %v, want %v", i, l.h.s.slotAddr(i), l.local)
	}
	return i
}

// last returns the latest captured datagram of type typ.
func (l *advLink) last(typ codec.PacketType) []byte {
	l.t.Helper()
	for k := len(l.captured) - 1; k >= 0; k-- {
		if d := l.captured[k].Data; len(d) > 0 && codec.PacketType(d[0]&0x0f) == typ && d[0] != 0 {
			return d
		}
	}
	l.t.Fatalf("no %v captured", typ)
	return nil
}

// advSlot is what the server says about a slot.
type advSlot struct {
	connected bool
	id        uint64
	addr      netip.AddrPort
}

func advSlotOf(s *Server, i int) advSlot {
	return advSlot{s.slotConnected(i), s.slotID(i), s.slotAddr(i)}
}

// advDrain takes every payload polled from slot i.
func advDrain(h *srvHarness, i int) []string {
	var got []string
	for b, ok := h.receive(i); ok; b, ok = h.receive(i) {
		got = append(got, string(b))
	}
	return got
}

// advKey returns a packet key made from a fixed byte, for forgeries.
func advKey(t *testing.T, b byte) *aead.PacketKey {
	t.Helper()
	k, err := aead.NewPacketKey(bytes.Repeat([]byte{b}, codec.KeyBytes), srvProtocol)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func advSeal(t *testing.T, typ codec.PacketType, seq uint64, key *aead.PacketKey) []byte {
	t.Helper()
	buf := make([]byte, codec.MaxPacketBytes)
	var n int
	var err error
	switch typ {
	case codec.ConnectionDisconnect:
		n, err = codec.WriteDisconnectPacket(buf, seq, key)
	case codec.ConnectionKeepAlive:
		n, err = codec.WriteKeepAlivePacket(buf, seq, 0, 0, key)
	case codec.ConnectionPayload:
		n, err = codec.WritePayloadPacket(buf, seq, []byte("forged"), key)
	default:
		t.Fatalf("advSeal: %v", typ)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// TestAdvReplayWithinSession replays payload and keep-alive packets
// recorded from a real client's session: each is dropped as a replay and
// leaves the slot as it was.
func TestAdvReplayWithinSession(t *testing.T) {
	for _, typ := range []codec.PacketType{codec.ConnectionPayload, codec.ConnectionKeepAlive} {
		t.Run(typ.String(), func(t *testing.T) {
			h := newSrvHarness(t, ServerConfig{})
			l := advNewLink(t, h, "192.0.2.10:5000")
			i := l.connect(h.srvToken(1, nil))
			if err := l.c.SendPacket([]byte("once")); err != nil {
				t.Fatal(err)
			}
			l.step(150 * time.Millisecond) // the payload, then a keep-alive
			l.step(150 * time.Millisecond)
			if got := advDrain(h, i); len(got) != 1 || got[0] != "once" {
				t.Fatalf("server received %q, want [once]", got)
			}
			rec := l.last(typ)
			before, slot := h.s.Stats(), advSlotOf(h.s, i)
			const replays = 5
			for range replays {
				h.deliver(0, l.local, rec)
			}
			after := h.s.Stats()
			if d := after.CodecDrops[codec.ReasonReplayed] - before.CodecDrops[codec.ReasonReplayed]; d != replays {
				t.Fatalf("ReasonReplayed grew by %d, want %d", d, replays)
			}
			if d := after.Dropped() - before.Dropped(); d != replays {
				t.Fatalf("Dropped grew by %d, want %d", d, replays)
			}
			if got := advSlotOf(h.s, i); got != slot {
				t.Fatalf("slot changed from %+v to %+v", slot, got)
			}
			if got := advDrain(h, i); len(got) != 0 {
				t.Fatalf("replays queued %q", got)
			}
		})
	}
}

// TestAdvReplayDoesNotKeepSilentClientAlive: keep-alives recorded from a
// client that then goes silent, replayed every second, must not refresh
// the slot's timeout.
func TestAdvReplayDoesNotKeepSilentClientAlive(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	l := advNewLink(t, h, "192.0.2.10:5000")
	i := l.connect(h.srvToken(1, nil)) // timeout 5 s
	l.step(150 * time.Millisecond)
	rec := l.last(codec.ConnectionKeepAlive)
	for range 10 { // the client is gone; the attacker replays
		h.conns[0].Push(l.local, rec)
		h.step(time.Second)
	}
	if h.s.slotConnected(i) {
		t.Fatal("replayed keep-alives kept a silent client connected past its timeout")
	}
	if st := h.s.Stats(); st.Timeouts != 1 || st.CodecDrops[codec.ReasonReplayed] == 0 {
		t.Fatalf("Timeouts %d, replays dropped %d; want 1 and > 0", st.Timeouts, st.CodecDrops[codec.ReasonReplayed])
	}
}

// TestAdvReplayAcrossReconnect records a real session (payload, keep-alive,
// disconnect), lets the same Client connect again with the same token from
// the same address, which the server refuses (the token has carried its
// session, and the client restarts its sequence at 0, so a second session
// would repeat its nonces), and replays the first session's packets during
// that attempt and into a later session on a fresh token: none is
// delivered or has any effect.
func TestAdvReplayAcrossReconnect(t *testing.T) {
	for _, typ := range []codec.PacketType{codec.ConnectionPayload, codec.ConnectionKeepAlive, codec.ConnectionDisconnect} {
		t.Run(typ.String(), func(t *testing.T) {
			h := newSrvHarness(t, ServerConfig{})
			l := advNewLink(t, h, "192.0.2.10:5000")
			token := h.srvToken(1, nil)
			l.connect(token)
			if err := l.c.SendPacket([]byte("old")); err != nil {
				t.Fatal(err)
			}
			l.step(150 * time.Millisecond)
			l.step(150 * time.Millisecond)
			advDrain(h, 0)
			l.c.Disconnect(h.now)
			l.pump()
			if h.s.NumConnectedClients() != 0 {
				t.Fatal("client still connected after Disconnect")
			}
			rec := l.last(typ)

			// Session 2 with the same token: refused while the client
			// retries, and the recording replayed meanwhile finds no key.
			if err := l.c.Connect(token, h.now); err != nil {
				t.Fatal(err)
			}
			for range 10 {
				l.step(100 * time.Millisecond)
				h.deliver(0, l.local, rec)
			}
			if l.c.State() == Connected || h.s.NumConnectedClients() != 0 {
				t.Fatalf("the same token connected again: client %v, %d slots", l.c.State(), h.s.NumConnectedClients())
			}
			st := h.s.Stats()
			if st.Drops[ServerDropTokenConsumed] == 0 || st.ChallengesSent != 1 {
				t.Fatalf("consumed-token drops %d, challenges %d; want > 0 and only the first session's 1",
					st.Drops[ServerDropTokenConsumed], st.ChallengesSent)
			}
			if got := h.sent(0, l.local); len(got) != 0 {
				t.Fatalf("server sent %d datagrams to the refused client", len(got))
			}

			// A fresh token from the same address: the recording does not
			// open under the new keys.
			l2 := advNewLink(t, h, "192.0.2.10:5000")
			i := l2.connect(h.srvToken(1, nil))
			l2.step(150 * time.Millisecond)
			advDrain(h, i)
			before, slot := h.s.Stats(), advSlotOf(h.s, i)
			h.deliver(0, l2.local, rec)
			after := h.s.Stats()
			if got := advSlotOf(h.s, i); got != slot {
				t.Fatalf("replayed %v from the first session changed the slot from %+v to %+v", typ, slot, got)
			}
			if got := advDrain(h, i); len(got) != 0 {
				t.Fatalf("replayed %v from the first session queued %q", typ, got)
			}
			// Dropped by the codec: as a replay when the new session has
			// already used its sequence, else as undecryptable.
			dropped := func(st ServerStats) uint64 {
				return st.CodecDrops[codec.ReasonDecrypt] + st.CodecDrops[codec.ReasonReplayed]
			}
			if dropped(after) != dropped(before)+1 || after.Dropped() != before.Dropped()+1 {
				t.Fatalf("replayed %v from the first session not dropped by the codec", typ)
			}
		})
	}
}

// TestAdvDisconnectBurstReplayAfterReset replays a client's disconnect
// burst after its slot was reset, while another client is connected: no
// key, no effect.
func TestAdvDisconnectBurstReplayAfterReset(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	l := advNewLink(t, h, "192.0.2.10:5000")
	l.connect(h.srvToken(1, nil))
	other := h.peer("192.0.2.20:5000", 2, nil)
	j := other.connect()
	l.c.Disconnect(h.now)
	l.pump()
	var burst [][]byte
	for _, d := range l.captured {
		if d.Data[0] != 0 && codec.PacketType(d.Data[0]&0x0f) == codec.ConnectionDisconnect {
			burst = append(burst, d.Data)
		}
	}
	if len(burst) != NumDisconnectPackets {
		t.Fatalf("captured %d disconnect packets, want %d", len(burst), NumDisconnectPackets)
	}
	before, slot := h.s.Stats(), advSlotOf(h.s, j)
	for _, pkt := range burst {
		h.deliver(0, l.local, pkt)
	}
	after := h.s.Stats()
	if after.ClientDisconnects != before.ClientDisconnects || advSlotOf(h.s, j) != slot || h.s.NumConnectedClients() != 1 {
		t.Fatalf("replayed disconnects had an effect: %+v -> %+v", slot, advSlotOf(h.s, j))
	}
	if d := after.CodecDrops[codec.ReasonNoKey] - before.CodecDrops[codec.ReasonNoKey]; d != NumDisconnectPackets {
		t.Fatalf("ReasonNoKey grew by %d, want %d", d, NumDisconnectPackets)
	}
}

// TestAdvTokenReusedFromOtherAddress: a connect token copied by an attacker
// is refused from another address while its owner is connecting, after it
// connected and after it left, and the owner is not disturbed. While the
// owner is connected the client-id check comes first in the standard's
// order, so that is the reason counted; once it left, the token is
// consumed and refused from every address, the owner's included.
func TestAdvTokenReusedFromOtherAddress(t *testing.T) {
	for _, c := range []struct {
		name   string
		state  int // 0 connecting, 1 connected, 2 disconnected
		reason ServerDropReason
	}{
		{"owner connecting", 0, ServerDropTokenOtherAddress},
		{"owner connected", 1, ServerDropClientIDConnected},
		{"owner disconnected", 2, ServerDropTokenConsumed},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newSrvHarness(t, ServerConfig{})
			a := h.peer("192.0.2.1:5000", 1, nil)
			if c.state == 0 {
				a.challenged()
			} else {
				a.connect()
			}
			if c.state == 2 {
				a.send(a.disconnect())
			}
			thief := h.peerWithToken("198.51.100.9:6000", a.token)
			for range 3 {
				thief.send(thief.request())
			}
			thief.expectNothing("token reused from another address")
			if got := h.drops(c.reason); got != 3 {
				t.Fatalf("%v = %d, want 3", c.reason, got)
			}
			// Without a mapping of its own the thief cannot answer the
			// owner's challenge either.
			thief.challenge, thief.challengeSeq = a.challenge, a.challengeSeq
			thief.send(thief.response())
			thief.expectNothing("response with the owner's challenge from the thief's address")
			if got := h.codecDrops(codec.ReasonNoKey); got != 1 {
				t.Fatalf("ReasonNoKey = %d, want 1", got)
			}
			switch c.state {
			case 0:
				srvExpectTypes(t, "owner's response", a.send(a.response()), codec.ConnectionKeepAlive)
			case 2:
				a.send(a.request())
				a.expectNothing("the owner's consumed token")
				if got := h.drops(ServerDropTokenConsumed); got != 4 {
					t.Fatalf("ServerDropTokenConsumed = %d, want 4", got)
				}
				a = h.peer(a.addr.String(), 1, nil) // a fresh token for the same player
				a.connect()
			}
			if h.s.NumConnectedClients() != 1 || advSlotOf(h.s, a.index) != (advSlot{true, 1, a.addr}) {
				t.Fatalf("owner's slot %+v, %d clients", advSlotOf(h.s, a.index), h.s.NumConnectedClients())
			}
		})
	}
}

// TestAdvSpoofedResponses: connection responses the server must ignore.
func TestAdvSpoofedResponses(t *testing.T) {
	t.Run("wrong key", func(t *testing.T) {
		h := newSrvHarness(t, ServerConfig{})
		a := h.peer("192.0.2.1:5000", 1, nil)
		a.challenged()
		buf := make([]byte, codec.MaxPacketBytes)
		n, err := codec.WriteResponsePacket(buf, 99, a.challengeSeq, a.challenge[:], advKey(t, 0xee))
		if err != nil {
			t.Fatal(err)
		}
		a.send(buf[:n])
		a.expectNothing("response sealed with the wrong key")
		if got := h.codecDrops(codec.ReasonDecrypt); got != 1 || h.s.NumConnectedClients() != 0 {
			t.Fatalf("ReasonDecrypt = %d, %d connected; want 1, 0", got, h.s.NumConnectedClients())
		}
		a.connect() // the mapping survived
	})
	t.Run("another client's challenge token", func(t *testing.T) {
		h := newSrvHarness(t, ServerConfig{})
		a := h.peer("192.0.2.1:5000", 1, nil)
		b := h.peer("192.0.2.2:5000", 2, nil)
		a.challenged()
		b.challenged()
		a.challenge, a.challengeSeq = b.challenge, b.challengeSeq
		a.send(a.response())
		if h.s.NumConnectedClients() != 0 {
			t.Fatalf("a response from %v carrying the challenge token of %v's handshake connected it as client id %d",
				a.addr, b.addr, h.s.slotID(0))
		}
		if got := h.drops(ServerDropChallengeMismatch); got != 1 {
			t.Fatalf("ServerDropChallengeMismatch = %d, want 1", got)
		}
		a.expectNothing("response with another client's challenge token")
		if h.s.Stats().Dropped() != 1 {
			t.Fatalf("the spoofed response was not counted as a drop")
		}
		b.connect()
	})
	t.Run("stale challenge token from before a restart", func(t *testing.T) {
		h1 := newSrvHarness(t, ServerConfig{})
		a1 := h1.peer("192.0.2.1:5000", 1, nil)
		a1.challenged()
		stale, staleSeq := a1.challenge, a1.challengeSeq
		h1.stop()
		h2 := newSrvHarness(t, ServerConfig{}) // same private key, new Server
		h2.now = h1.now
		a2 := h2.peerWithToken(a1.addr.String(), a1.token)
		a2.seq = a1.seq
		a2.challenged()
		if a2.challengeSeq != staleSeq {
			t.Fatalf("challenge sequences %d and %d; the test wants the same nonce under both keys", staleSeq, a2.challengeSeq)
		}
		fresh := a2.challenge
		a2.challenge = stale
		a2.send(a2.response())
		a2.expectNothing("stale challenge token")
		if got := h2.drops(ServerDropChallengeDecrypt); got != 1 || h2.s.NumConnectedClients() != 0 {
			t.Fatalf("ServerDropChallengeDecrypt = %d, %d connected; want 1, 0", got, h2.s.NumConnectedClients())
		}
		a2.challenge = fresh
		srvExpectTypes(t, "fresh response", a2.send(a2.response()), codec.ConnectionKeepAlive)
	})
}

// advRestart replaces the harness's server by a new one on the harness's
// conns plus extra, configured like newSrvHarness does.
func advRestart(h *srvHarness, cfg ServerConfig, extra ...batchio.Conn) *Server {
	h.t.Helper()
	cfg.PrivateKey, cfg.ProtocolID = testPrivateKey, srvProtocol
	if cfg.MaxClients == 0 {
		cfg.MaxClients = 4
	}
	cfg.Manual = true
	cfg.Clock = func() time.Time { return h.now }
	var conns []batchio.Conn
	for _, c := range h.conns {
		conns = append(conns, c)
	}
	now := h.now
	h.now = now.Add(-srvStartGrace) // tokens minted at now are admitted
	s, err := NewServer(cfg, append(conns, extra...)...)
	if err != nil {
		h.t.Fatal(err)
	}
	h.now = now
	h.s = s
	return s
}

// TestAdvEveryPrefixAndLength feeds every prefix byte 0..255 with every
// length 0..1300 from the addresses of connected clients, a client in the
// middle of its handshake and a stranger: nothing is accepted, the clients
// stay connected and every datagram is counted as exactly one drop.
func TestAdvEveryPrefixAndLength(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	// A second conn whose reads are made up in the server's own buffers.
	gen := batchiotest.NewConn(netip.MustParseAddrPort("10.0.0.1:40001"))
	s := advRestart(h, ServerConfig{PublicAddresses: []netip.AddrPort{srvAddr}}, gen)
	a := h.peer("192.0.2.1:5000", 1, nil)
	b := h.peer("192.0.2.2:5000", 2, nil)
	ia, ib := a.connect(), b.connect()
	a.send(a.keepAlive())
	b.send(b.keepAlive())
	pending := h.peer("192.0.2.3:5000", 3, nil)
	pending.challenged()
	sources := []netip.AddrPort{a.addr, b.addr, pending.addr, netip.MustParseAddrPort("198.51.100.1:1")}
	slotA, slotB := advSlotOf(s, ia), advSlotOf(s, ib)

	before := s.Stats()
	outBefore := h.conns[0].Stats().Written
	prefix, length := 0, 0
	gen.Generate = func(buf []byte) (int, netip.AddrPort, bool) {
		if prefix > 255 {
			return 0, netip.AddrPort{}, false
		}
		n := length
		if n > 0 {
			buf[0] = byte(prefix)
		}
		for k := 1; k < n; k++ {
			buf[k] = byte(k*7 + prefix + length)
		}
		from := sources[(prefix+length)%len(sources)]
		if length++; length > codec.MaxPacketBytes {
			length = 0
			prefix++
		}
		return n, from, true
	}
	for range 1000 { // 333,056 datagrams; an Update reads at most 1,024 per conn
		if prefix > 255 {
			break
		}
		s.Update(h.now)
	}
	const fed = 256 * (codec.MaxPacketBytes + 1)
	if got := gen.Stats().Read; got != fed {
		t.Fatalf("fed %d datagrams, want %d", got, fed)
	}
	after := s.Stats()
	if d := after.PacketsIn - before.PacketsIn; d != fed {
		t.Fatalf("PacketsIn grew by %d, want %d", d, fed)
	}
	if d := after.Dropped() - before.Dropped(); d != fed {
		t.Fatalf("drops grew by %d, want %d (every datagram dropped exactly once)", d, fed)
	}
	if after.ChallengesSent != before.ChallengesSent || after.DeniedSent != before.DeniedSent ||
		after.Connects != before.Connects || after.ClientDisconnects != before.ClientDisconnects {
		t.Fatalf("garbage was accepted: before %+v after %+v", before, after)
	}
	if sent := h.conns[0].Stats().Written - outBefore + gen.Stats().Written; sent != 0 {
		t.Fatalf("server sent %d datagrams in reply to garbage", sent)
	}
	if advSlotOf(s, ia) != slotA || advSlotOf(s, ib) != slotB || s.NumConnectedClients() != 2 {
		t.Fatalf("slots changed: %+v %+v", advSlotOf(s, ia), advSlotOf(s, ib))
	}
	if q := append(advDrain(h, ia), advDrain(h, ib)...); len(q) != 0 {
		t.Fatalf("garbage queued payloads %q", q)
	}
	// The clients' replay windows and the pending mapping still work.
	a.send(a.payload([]byte("a")))
	b.send(b.payload([]byte("b")))
	if ga, gb := advDrain(h, ia), advDrain(h, ib); len(ga) != 1 || len(gb) != 1 {
		t.Fatalf("after the flood the clients' payloads were not received: %q %q", ga, gb)
	}
	srvExpectTypes(t, "pending response", pending.send(pending.response()), codec.ConnectionKeepAlive)
}

// TestAdvTruncatedAndExtendedTags cuts the tag of valid packets short by 1
// to 16 bytes or appends 1 to 16 bytes: every variant is dropped without
// effect, and the intact packet is still accepted afterwards (the failed
// copies did not advance the replay window).
func TestAdvTruncatedAndExtendedTags(t *testing.T) {
	for _, typ := range []codec.PacketType{codec.ConnectionResponse, codec.ConnectionKeepAlive, codec.ConnectionPayload, codec.ConnectionDisconnect} {
		t.Run(typ.String(), func(t *testing.T) {
			h := newSrvHarness(t, ServerConfig{})
			a := h.peer("192.0.2.1:5000", 1, nil)
			var pkt []byte
			switch typ {
			case codec.ConnectionResponse:
				a.challenged()
				pkt = a.response()
			case codec.ConnectionKeepAlive:
				a.connect()
				pkt = a.keepAlive()
			case codec.ConnectionPayload:
				a.connect()
				pkt = a.payload([]byte("twenty bytes of data"))
			case codec.ConnectionDisconnect:
				a.connect()
				pkt = a.disconnect()
			}
			connected := h.s.NumConnectedClients()
			before := h.s.Stats()
			variants := 0
			for k := 1; k <= codec.MACBytes; k++ {
				extended := append(append([]byte(nil), pkt...), bytes.Repeat([]byte{byte(k)}, k)...)
				for _, v := range [][]byte{pkt[:len(pkt)-k], extended} {
					h.deliver(0, a.addr, v)
					variants++
				}
			}
			a.expectNothing("mangled tags")
			after := h.s.Stats()
			if d := after.Dropped() - before.Dropped(); d != uint64(variants) {
				t.Fatalf("%d of %d mangled packets dropped", d, variants)
			}
			if h.s.NumConnectedClients() != connected || after.ClientDisconnects != 0 || len(advDrain(h, 0)) != 0 {
				t.Fatal("a mangled packet had an effect")
			}
			h.deliver(0, a.addr, pkt)
			if h.s.Stats().Dropped() != after.Dropped() {
				t.Fatalf("the intact %v was dropped after its mangled copies", typ)
			}
		})
	}
}

// TestAdvForgedDisconnect: disconnect packets an attacker can make do not
// disconnect anyone.
func TestAdvForgedDisconnect(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	b := h.peer("192.0.2.2:5000", 2, nil)
	ia, ib := a.connect(), b.connect()
	pending := h.peer("192.0.2.3:5000", 3, nil)
	pending.challenged()
	stranger := netip.MustParseAddrPort("198.51.100.1:7")
	for _, c := range []struct {
		name   string
		from   netip.AddrPort
		pkt    []byte
		codec  codec.DropReason
		server ServerDropReason
	}{
		{"unconnected address, client's key", stranger, advSeal(t, codec.ConnectionDisconnect, 500, a.seal), codec.ReasonNoKey, 0},
		{"unconnected address, random key", stranger, advSeal(t, codec.ConnectionDisconnect, 500, advKey(t, 1)), codec.ReasonNoKey, 0},
		{"client's address, random key", a.addr, advSeal(t, codec.ConnectionDisconnect, 500, advKey(t, 1)), codec.ReasonDecrypt, 0},
		{"client's address, server-to-client key", a.addr, advSeal(t, codec.ConnectionDisconnect, 500, a.open), codec.ReasonDecrypt, 0},
		{"client's address, another client's key", a.addr, advSeal(t, codec.ConnectionDisconnect, 500, b.seal), codec.ReasonDecrypt, 0},
		{"pending address, its own key", pending.addr, advSeal(t, codec.ConnectionDisconnect, 500, pending.seal), 0, ServerDropNotConnected},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := h.s.Stats()
			h.deliver(0, c.from, c.pkt)
			after := h.s.Stats()
			if c.codec != 0 && after.CodecDrops[c.codec] != before.CodecDrops[c.codec]+1 {
				t.Fatalf("%v not counted", c.codec)
			}
			if c.server != 0 && after.Drops[c.server] != before.Drops[c.server]+1 {
				t.Fatalf("%v not counted", c.server)
			}
			if after.Dropped() != before.Dropped()+1 || after.ClientDisconnects != 0 || len(h.disconnects) != 0 {
				t.Fatalf("forged disconnect had an effect: disconnects %v", h.disconnects)
			}
			if advSlotOf(h.s, ia) != (advSlot{true, 1, a.addr}) || advSlotOf(h.s, ib) != (advSlot{true, 2, b.addr}) {
				t.Fatal("a client lost its slot")
			}
		})
	}
	srvExpectTypes(t, "pending response", pending.send(pending.response()), codec.ConnectionKeepAlive)
}

// TestAdvPayloadBeforeConnected: payloads and keep-alives from an address
// that has only finished half of the handshake are dropped, and are not
// delivered once it connects.
func TestAdvPayloadBeforeConnected(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	a.challenged()
	a.send(a.payload([]byte("early")))
	a.send(a.keepAlive())
	a.expectNothing("payload and keep-alive before connected")
	if got := h.drops(ServerDropNotConnected); got != 2 {
		t.Fatalf("ServerDropNotConnected = %d, want 2", got)
	}
	i := a.connect()
	if got := advDrain(h, i); len(got) != 0 {
		t.Fatalf("payload sent before the client was connected was delivered: %q", got)
	}
}

// TestAdvSameClientIDTwoAddresses: a second address with a token for a
// connected client id is refused, at the request and at the response,
// while the first stays connected; once it leaves, the second may connect.
func TestAdvSameClientIDTwoAddresses(t *testing.T) {
	for _, atResponse := range []bool{false, true} {
		t.Run(fmt.Sprintf("refused at response %v", atResponse), func(t *testing.T) {
			h := newSrvHarness(t, ServerConfig{})
			first := h.peer("192.0.2.1:5000", 7, nil)
			second := h.peer("192.0.2.2:5000", 7, nil) // its own token, same id
			if atResponse {
				first.challenged()
				second.challenged()
				srvExpectTypes(t, "first response", first.send(first.response()), codec.ConnectionKeepAlive)
				second.send(second.response())
			} else {
				first.connect()
				second.send(second.request())
			}
			second.expectNothing("second address with a connected client id")
			if got := h.drops(ServerDropClientIDConnected); got != 1 {
				t.Fatalf("ServerDropClientIDConnected = %d, want 1", got)
			}
			if h.s.NumConnectedClients() != 1 || advSlotOf(h.s, first.index) != (advSlot{true, 7, first.addr}) {
				t.Fatalf("first client's slot %+v", advSlotOf(h.s, first.index))
			}
			first.send(first.disconnect())
			second.connect()
		})
	}
}

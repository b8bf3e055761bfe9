package engine

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/ring"
)

// This file has the client tests' scripted world: a batchiotest.Conn for
// the client and a fake server built from the codec writers and aead keys, independent of the real
// server.

// newCTConn is the client's conn: the fake servers push their answers
// into it and deliver takes what the client sent.
func newCTConn(local string) *batchiotest.Conn {
	return batchiotest.NewConn(netip.MustParseAddrPort(local))
}

// dropInbox discards what was pushed to c and not read yet, as a network
// that loses it.
func dropInbox(c *batchiotest.Conn) {
	msgs := batchio.NewMessages(64, codec.MaxPacketBytes)
	for {
		if n, _ := c.ReadBatch(msgs); n == 0 {
			return
		}
	}
}

// ctServerMode scripts how a ctServer answers.
type ctServerMode int

const (
	ctAccept        ctServerMode = iota // challenge, then keep-alive
	ctSilent                            // never answers
	ctDeny                              // answers requests with denied
	ctChallengeOnly                     // challenges but never accepts the response
)

// ctServer reads the client's packets with the codec and answers as its
// mode says. It learns the session keys from the private token in the
// client's request, as a real server does.
type ctServer struct {
	t          *testing.T
	addr       netip.AddrPort
	conn       *batchiotest.Conn // the client's conn; answers are pushed into it
	mode       ctServerMode
	protocolID uint64
	now        *time.Time

	tokenKey     *aead.TokenKey
	challengeKey *aead.ChallengeKey
	clientIndex  uint32
	maxClients   uint32

	sendKey, recvKey *aead.PacketKey
	replay           ring.Replay
	priv             codec.PrivateToken
	globalSeq        uint64 // for denied and challenge, from 2^63
	seq              uint64 // session sequence
	challengeSeq     uint64

	got          [codec.NumPacketTypes]int // packets received by type
	rejected     int                       // packets the codec rejected
	goodResponse int                       // responses whose challenge token opened
	payloads     [][]byte
	seqs         []uint64 // sequences of encrypted packets received

	buf  [codec.MaxPacketBytes]byte
	last []byte // the last datagram sent, for replay tests
	tok  [codec.ChallengeTokenBytes]byte
}

func (s *ctServer) params() *codec.ReadParams {
	p := &codec.ReadParams{Role: codec.RoleServer, ProtocolID: s.protocolID, Now: uint64(s.now.Unix()), TokenKey: s.tokenKey}
	if s.recvKey != nil {
		p.Key = s.recvKey
		p.Replay = &s.replay
	}
	return p
}

// handle processes one ctDatagram the client sent to this server.
func (s *ctServer) handle(pkt []byte) {
	s.t.Helper()
	var p codec.Packet
	if err := codec.ReadPacket(pkt, s.params(), &p); err != nil {
		s.rejected++
		return
	}
	s.got[p.Type]++
	if p.Type != codec.ConnectionRequest {
		s.seqs = append(s.seqs, p.Sequence)
	}
	switch p.Type {
	case codec.ConnectionRequest:
		if err := codec.ReadPrivateToken(p.PrivateToken, &s.priv); err != nil {
			s.t.Errorf("server %v: private token unreadable: %v", s.addr, err)
			return
		}
		if !s.priv.HasAddress(s.addr) {
			s.t.Errorf("server %v: not in the token's addresses %v", s.addr, s.priv.Addresses())
		}
		if s.recvKey == nil {
			s.recvKey = ctPacketKey(s.t, s.priv.ClientToServerKey[:], s.protocolID)
			s.sendKey = ctPacketKey(s.t, s.priv.ServerToClientKey[:], s.protocolID)
			s.replay.Reset()
		}
		switch s.mode {
		case ctDeny:
			s.sendDenied()
		case ctAccept, ctChallengeOnly:
			s.sendChallenge()
		}
	case codec.ConnectionResponse:
		tok := append([]byte(nil), p.ChallengeToken...)
		if err := s.challengeKey.Open(tok, p.ChallengeSequence); err != nil {
			s.t.Errorf("server %v: response's challenge token does not open: %v", s.addr, err)
			return
		}
		var ct codec.ChallengeToken
		if err := codec.ReadChallengeToken(tok, &ct); err != nil || ct.ClientID != s.priv.ClientID {
			s.t.Errorf("server %v: challenge token client id %d, want %d (%v)", s.addr, ct.ClientID, s.priv.ClientID, err)
		}
		s.goodResponse++
		if s.mode == ctAccept {
			s.sendKeepAlive()
		}
	case codec.ConnectionPayload:
		s.payloads = append(s.payloads, append([]byte(nil), p.Payload...))
	}
}

func ctPacketKey(t *testing.T, key []byte, protocolID uint64) *aead.PacketKey {
	t.Helper()
	k, err := aead.NewPacketKey(key, protocolID)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// push sends buf[:n] to the client from this server's address.
func (s *ctServer) push(n int, err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("server %v: write: %v", s.addr, err)
	}
	s.last = s.buf[:n]
	s.conn.Push(s.addr, s.buf[:n])
}

func (s *ctServer) sendDenied() {
	s.globalSeq++
	s.push(codec.WriteDeniedPacket(s.buf[:], s.globalSeq, s.sendKey))
}

func (s *ctServer) sendChallenge() {
	ct := codec.ChallengeToken{ClientID: s.priv.ClientID}
	if err := codec.WriteChallengeToken(s.tok[:], &ct); err != nil {
		s.t.Fatal(err)
	}
	if err := s.challengeKey.Seal(s.tok[:], s.challengeSeq); err != nil {
		s.t.Fatal(err)
	}
	s.globalSeq++
	s.push(codec.WriteChallengePacket(s.buf[:], s.globalSeq, s.challengeSeq, s.tok[:], s.sendKey))
	s.challengeSeq++
}

func (s *ctServer) sendKeepAlive() {
	s.push(codec.WriteKeepAlivePacket(s.buf[:], s.seq, s.clientIndex, s.maxClients, s.sendKey))
	s.seq++
}

func (s *ctServer) sendPayload(p []byte) {
	s.push(codec.WritePayloadPacket(s.buf[:], s.seq, p, s.sendKey))
	s.seq++
}

func (s *ctServer) sendDisconnect() {
	s.push(codec.WriteDisconnectPacket(s.buf[:], s.seq, s.sendKey))
	s.seq++
}

// resend pushes the last datagram again (a replay).
func (s *ctServer) resend() {
	s.conn.Push(s.addr, s.last)
}

// clientHarness is a client on one fake IPv4 conn with up to three fake
// servers and a fake clock.
type clientHarness struct {
	t          *testing.T
	now        time.Time
	conn       *batchiotest.Conn
	client     *Client
	servers    []*ctServer
	privateKey []byte
	protocolID uint64
	states     []ClientState // every state entered, in order
	stray      int           // datagrams sent to no known server
}

var ctServerAddrs = []string{"10.0.0.1:40000", "10.0.0.2:40000", "10.0.0.3:40000"}

func newClientHarness(t *testing.T, cfg ClientConfig, modes ...ctServerMode) *clientHarness {
	t.Helper()
	h := &clientHarness{
		t:          t,
		now:        time.Unix(1_700_000_000, 0),
		conn:       newCTConn("10.0.0.100:50000"),
		privateKey: make([]byte, 32),
		protocolID: 0x1122334455667788,
	}
	for i := range h.privateKey {
		h.privateKey[i] = byte(i + 1)
	}
	tokenKey, err := aead.NewTokenKey(h.privateKey)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range modes {
		var ck [32]byte
		ck[0] = byte(i + 1)
		chKey, err := aead.NewChallengeKey(ck[:])
		if err != nil {
			t.Fatal(err)
		}
		h.servers = append(h.servers, &ctServer{
			t: t, addr: netip.MustParseAddrPort(ctServerAddrs[i]), conn: h.conn, mode: m,
			protocolID: h.protocolID, now: &h.now, tokenKey: tokenKey, challengeKey: chKey,
			clientIndex: uint32(3 + i), maxClients: 16, globalSeq: 1 << 63,
		})
	}
	prev := cfg.OnStateChange
	cfg.OnStateChange = func(old, new ClientState) {
		if len(h.states) > 0 && h.states[len(h.states)-1] != old {
			t.Errorf("state change from %v, but the last state entered was %v", old, h.states[len(h.states)-1])
		}
		h.states = append(h.states, new)
		if prev != nil {
			prev(old, new)
		}
	}
	h.client, err = NewClient(cfg, h.conn)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// token mints a connect token for all the harness's servers.
func (h *clientHarness) token(timeoutSeconds int32, expireSeconds int64) []byte {
	h.t.Helper()
	return h.tokenAt(timeoutSeconds, expireSeconds, h.now)
}

func (h *clientHarness) tokenAt(timeoutSeconds int32, expireSeconds int64, created time.Time) []byte {
	h.t.Helper()
	var addrs []netip.AddrPort
	for _, s := range h.servers {
		addrs = append(addrs, s.addr)
	}
	tok, err := GenerateConnectToken(TokenParams{
		ProtocolID: h.protocolID, PrivateKey: h.privateKey, ClientID: 42,
		PublicAddresses: addrs, ExpireSeconds: expireSeconds, TimeoutSeconds: timeoutSeconds,
		Now: created,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

func (h *clientHarness) connect(token []byte) {
	h.t.Helper()
	if err := h.client.Connect(token, h.now); err != nil {
		h.t.Fatalf("Connect: %v", err)
	}
}

// deliver hands everything the client sent to the servers.
func (h *clientHarness) deliver() {
	for _, d := range h.conn.Sent() {
		found := false
		for _, s := range h.servers {
			if s.addr == d.Addr {
				s.handle(d.Data)
				found = true
			}
		}
		if !found {
			h.stray++
		}
	}
}

// step advances the clock by d, updates the client and lets the servers
// answer (the answers are read by the next step).
func (h *clientHarness) step(d time.Duration) {
	h.now = h.now.Add(d)
	h.client.Update(h.now)
	h.deliver()
}

// runUntil steps by tick until cond holds or limit of fake time passes; it
// reports whether cond held.
func (h *clientHarness) runUntil(tick, limit time.Duration, cond func() bool) bool {
	for elapsed := time.Duration(0); elapsed <= limit; elapsed += tick {
		if cond() {
			return true
		}
		h.step(tick)
	}
	return cond()
}

// connected runs a full handshake with the harness's first accepting server.
func (h *clientHarness) connected(token []byte) {
	h.t.Helper()
	h.connect(token)
	if !h.runUntil(10*time.Millisecond, 5*time.Second, func() bool { return h.client.State() == Connected }) {
		h.t.Fatalf("not connected: state %v", h.client.State())
	}
}

func (h *clientHarness) inState(s ClientState) func() bool {
	return func() bool { return h.client.State() == s }
}

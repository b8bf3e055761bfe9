package engine

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

// Test harness for the server: batchiotest conns, a fake clock and a test
// client ("peer") that builds packets with the codec writers and aead keys.

const srvProtocol = 0x1122334455667788

var (
	srvAddr  = netip.MustParseAddrPort("10.0.0.1:40000")
	srvAddr6 = netip.MustParseAddrPort("[2001:db8::1]:40000")
	srvEpoch = time.Unix(1_700_000_000, 0)
)

type srvDisconnect struct {
	index  int
	reason DisconnectReason
}

type srvHarness struct {
	t           *testing.T
	s           *Server
	conns       []*batchiotest.Conn
	now         time.Time
	connects    []int
	disconnects []srvDisconnect
	// payloads holds each slot's polled payloads until receive takes them.
	payloads map[int][][]byte
	// hold stops update from polling: events stay queued in the server.
	hold bool
}

// newSrvHarness starts a server on one in-memory conn per local address
// (srvAddr if none). cfg.PrivateKey and ProtocolID default to the test ones.
func newSrvHarness(t *testing.T, cfg ServerConfig, locals ...netip.AddrPort) *srvHarness {
	t.Helper()
	return newSrvHarnessAt(t, srvEpoch, cfg, locals...)
}

// srvStartGrace is how long before a harness's clock its server starts:
// tokens minted at the harness's start are then admitted (the restart
// rule refuses those minted before TokensAdmittedFrom).
const srvStartGrace = ConnectTokenClockSkew + time.Second

// newSrvHarnessAt is newSrvHarness with the clock at start, and the server
// started srvStartGrace before it.
func newSrvHarnessAt(t *testing.T, start time.Time, cfg ServerConfig, locals ...netip.AddrPort) *srvHarness {
	t.Helper()
	if len(locals) == 0 {
		locals = []netip.AddrPort{srvAddr}
	}
	h := &srvHarness{t: t, now: start.Add(-srvStartGrace), payloads: map[int][][]byte{}}
	cfg.Manual = true
	cfg.Clock = func() time.Time { return h.now }
	if cfg.PrivateKey == nil {
		cfg.PrivateKey = testPrivateKey
	}
	if cfg.ProtocolID == 0 {
		cfg.ProtocolID = srvProtocol
	}
	if cfg.MaxClients == 0 {
		cfg.MaxClients = 4
	}
	conns := make([]batchio.Conn, len(locals))
	for i, a := range locals {
		c := batchiotest.NewConn(a)
		h.conns = append(h.conns, c)
		conns[i] = c
	}
	s, err := NewServer(cfg, conns...)
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	h.now = start
	return h
}

// step advances the clock and runs update.
func (h *srvHarness) step(d time.Duration) {
	h.now = h.now.Add(d)
	h.update()
}

// update runs Update at the current time and polls the events.
func (h *srvHarness) update() {
	if err := h.s.Update(h.now); err != nil {
		h.t.Fatal(err)
	}
	if !h.hold {
		h.poll()
	}
}

// poll records the server's events: connects and disconnects in order,
// payloads per slot.
func (h *srvHarness) poll() {
	h.s.Poll(func(ev *Event) {
		switch ev.Kind {
		case EventConnect:
			h.connects = append(h.connects, ev.ClientIndex)
		case EventDisconnect:
			h.disconnects = append(h.disconnects, srvDisconnect{ev.ClientIndex, ev.Reason})
		case EventPayload:
			h.payloads[ev.ClientIndex] = append(h.payloads[ev.ClientIndex], append([]byte(nil), ev.Payload...))
		}
	})
}

// stop stops the server at the current time and polls its disconnect
// events, which frees the slots.
func (h *srvHarness) stop() {
	if err := h.s.Stop(); err != nil {
		h.t.Fatal(err)
	}
	h.poll()
}

// receive takes the oldest payload polled from slot i.
func (h *srvHarness) receive(i int) ([]byte, bool) {
	q := h.payloads[i]
	if len(q) == 0 {
		return nil, false
	}
	h.payloads[i] = q[1:]
	return q[0], true
}

// deliver queues pkt from from on conn sock and runs update at the
// current time.
func (h *srvHarness) deliver(sock int, from netip.AddrPort, pkt []byte) {
	h.conns[sock].Push(from, pkt)
	h.update()
}

// sent returns and forgets what the server wrote on conn sock to addr.
func (h *srvHarness) sent(sock int, to netip.AddrPort) [][]byte {
	return h.conns[sock].Take(to)
}

func (h *srvHarness) drops(r ServerDropReason) uint64 {
	st := h.s.Stats()
	return st.Drops[r]
}

func (h *srvHarness) codecDrops(r codec.DropReason) uint64 {
	st := h.s.Stats()
	return st.CodecDrops[r]
}

// srvPeer is a test client of the harness's server.
type srvPeer struct {
	h     *srvHarness
	addr  netip.AddrPort
	sock  int
	token []byte
	ct    codec.ConnectToken
	seal  *aead.PacketKey // client to server
	open  *aead.PacketKey // server to client
	seq   uint64

	challengeSeq uint64
	challenge    [codec.ChallengeTokenBytes]byte
	index        int
}

// srvToken mints a token for the harness's server; edit adjusts the
// parameters first.
func (h *srvHarness) srvToken(clientID uint64, edit func(*TokenParams)) []byte {
	h.t.Helper()
	p := TokenParams{
		ProtocolID:      srvProtocol,
		PrivateKey:      testPrivateKey,
		ClientID:        clientID,
		PublicAddresses: []netip.AddrPort{srvAddr},
		ExpireSeconds:   30,
		TimeoutSeconds:  5,
		UserData:        []byte("user data"),
		Now:             h.now,
	}
	if edit != nil {
		edit(&p)
	}
	tok, err := GenerateConnectToken(p)
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

func (h *srvHarness) peer(addr string, clientID uint64, edit func(*TokenParams)) *srvPeer {
	return h.peerWithToken(addr, h.srvToken(clientID, edit))
}

func (h *srvHarness) peerWithToken(addr string, token []byte) *srvPeer {
	h.t.Helper()
	p := &srvPeer{h: h, addr: netip.MustParseAddrPort(addr), token: token, index: -1}
	if err := codec.ReadConnectToken(token, &p.ct); err != nil {
		h.t.Fatal(err)
	}
	var err error
	if p.seal, err = aead.NewPacketKey(p.ct.ClientToServerKey[:], p.ct.ProtocolID); err != nil {
		h.t.Fatal(err)
	}
	if p.open, err = aead.NewPacketKey(p.ct.ServerToClientKey[:], p.ct.ProtocolID); err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (p *srvPeer) request() []byte {
	buf := make([]byte, codec.RequestPacketBytes)
	if _, err := codec.WriteRequestPacket(buf, p.ct.ProtocolID, p.ct.ExpireTimestamp, p.ct.Nonce[:], p.ct.PrivateData[:]); err != nil {
		p.h.t.Fatal(err)
	}
	return buf
}

func (p *srvPeer) next() uint64 { s := p.seq; p.seq++; return s }

func (p *srvPeer) response() []byte {
	buf := make([]byte, codec.MaxPacketBytes)
	n, err := codec.WriteResponsePacket(buf, p.next(), p.challengeSeq, p.challenge[:], p.seal)
	if err != nil {
		p.h.t.Fatal(err)
	}
	return buf[:n]
}

func (p *srvPeer) keepAlive() []byte {
	buf := make([]byte, codec.MaxPacketBytes)
	n, err := codec.WriteKeepAlivePacket(buf, p.next(), 0, 0, p.seal)
	if err != nil {
		p.h.t.Fatal(err)
	}
	return buf[:n]
}

func (p *srvPeer) payload(b []byte) []byte {
	buf := make([]byte, codec.MaxPacketBytes)
	n, err := codec.WritePayloadPacket(buf, p.next(), b, p.seal)
	if err != nil {
		p.h.t.Fatal(err)
	}
	return buf[:n]
}

func (p *srvPeer) disconnect() []byte {
	buf := make([]byte, codec.MaxPacketBytes)
	n, err := codec.WriteDisconnectPacket(buf, p.next(), p.seal)
	if err != nil {
		p.h.t.Fatal(err)
	}
	return buf[:n]
}

// send delivers pkt from the peer and returns the decoded replies to it.
func (p *srvPeer) send(pkt []byte) []codec.Packet {
	p.h.deliver(p.sock, p.addr, pkt)
	return p.received()
}

// received decodes what the server sent to the peer since the last call.
// Every datagram must decrypt with the token's server-to-client key.
func (p *srvPeer) received() []codec.Packet {
	p.h.t.Helper()
	var out []codec.Packet
	for _, raw := range p.h.sent(p.sock, p.addr) {
		pkt, err := p.decode(raw)
		if err != nil {
			p.h.t.Fatalf("server sent %d bytes that do not decode with the client's key: %v", len(raw), err)
		}
		out = append(out, pkt)
	}
	return out
}

func (p *srvPeer) decode(raw []byte) (codec.Packet, error) {
	var pkt codec.Packet
	rp := codec.ReadParams{Role: codec.RoleClient, ProtocolID: p.ct.ProtocolID, Key: p.open}
	if err := codec.ReadPacket(append([]byte(nil), raw...), &rp, &pkt); err != nil {
		return pkt, err
	}
	if pkt.Type == codec.ConnectionChallenge {
		p.challengeSeq = pkt.ChallengeSequence
		copy(p.challenge[:], pkt.ChallengeToken)
	}
	if pkt.Type == codec.ConnectionKeepAlive {
		p.index = int(pkt.ClientIndex)
	}
	return pkt, nil
}

// expectTypes fails unless pkts have exactly the types want.
func srvExpectTypes(t *testing.T, what string, pkts []codec.Packet, want ...codec.PacketType) {
	t.Helper()
	if len(pkts) != len(want) {
		t.Fatalf("%s: got %d packets %v, want %v", what, len(pkts), srvTypes(pkts), want)
	}
	for i := range want {
		if pkts[i].Type != want[i] {
			t.Fatalf("%s: got %v, want %v", what, srvTypes(pkts), want)
		}
	}
}

func srvTypes(pkts []codec.Packet) []codec.PacketType {
	var ts []codec.PacketType
	for _, p := range pkts {
		ts = append(ts, p.Type)
	}
	return ts
}

// challenge sends a request and expects a challenge.
func (p *srvPeer) challenged() {
	p.h.t.Helper()
	srvExpectTypes(p.h.t, "reply to request", p.send(p.request()), codec.ConnectionChallenge)
}

// connect runs the handshake and returns the client index.
func (p *srvPeer) connect() int {
	p.h.t.Helper()
	p.challenged()
	srvExpectTypes(p.h.t, "reply to response", p.send(p.response()), codec.ConnectionKeepAlive)
	if !p.h.s.slotConnected(p.index) || p.h.s.slotAddr(p.index) != p.addr {
		p.h.t.Fatalf("slot %d not connected to %v", p.index, p.addr)
	}
	if c := p.h.connects; len(c) == 0 || c[len(c)-1] != p.index {
		p.h.t.Fatalf("OnConnect events %v; want the last for slot %d", c, p.index)
	}
	return p.index
}

// srvSequence returns the sequence number of an encrypted packet.
func srvSequence(raw []byte) uint64 {
	n := int(raw[0] >> 4)
	var b [8]byte
	copy(b[:], raw[1:1+n])
	return binary.LittleEndian.Uint64(b[:])
}

// Test views of a manual-mode server's slots, read on the goroutine that
// drives it.

func (s *Server) slotConnected(i int) bool {
	return i >= 0 && i < len(s.slots) && s.slots[i].connected
}

func (s *Server) slotAddr(i int) netip.AddrPort {
	if !s.slotConnected(i) || s.slots[i].loopback {
		return netip.AddrPort{}
	}
	return s.slots[i].addr
}

func (s *Server) slotID(i int) uint64 {
	if !s.slotConnected(i) {
		return 0
	}
	return s.slots[i].clientID
}

func (s *Server) slotUserData(i int) [codec.UserDataBytes]byte {
	if !s.slotConnected(i) {
		return [codec.UserDataBytes]byte{}
	}
	return s.slots[i].userData
}

// shard0 is the first shard, the only one of a one-conn harness.
func (s *Server) shard0() *shard { return s.shards[0] }

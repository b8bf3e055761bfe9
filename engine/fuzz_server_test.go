package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/ring"
)

// FuzzServerIntake feeds arbitrary datagrams from a few source addresses
// (two connected clients, a client in the middle of its handshake,
// strangers) to a server and checks that nothing an attacker can send
// disturbs the connected clients and that every datagram is accounted for.
//
// Input: records of [op][len lo][len hi][len bytes]. op&7 picks the source
// (advFuzzSources); op&7 == 7 advances the clock by (op>>3)*10ms instead.
// The length is taken modulo 1301 and cut to what the input has left.
//
// The clients' tokens have fixed keys and nonces, so the seed corpus in
// testdata/fuzz/FuzzServerIntake can hold packets they really sent; set
// ADV_WRITE_FUZZ_SEEDS=1 and run TestFuzzServerIntakeSeeds to rewrite it.

const advFuzzMaxRecords = 64

var advFuzzSources = [...]netip.AddrPort{
	netip.MustParseAddrPort("192.0.2.1:5000"),     // 0: client A, connected
	netip.MustParseAddrPort("192.0.2.2:5000"),     // 1: client B, connected
	netip.MustParseAddrPort("192.0.2.3:5000"),     // 2: client C, challenged
	netip.MustParseAddrPort("198.51.100.1:6000"),  // 3: stranger
	netip.MustParseAddrPort("[2001:db8::9]:6000"), // 4: IPv6 stranger
	netip.MustParseAddrPort("192.0.2.1:5001"),     // 5: A's host, another port
	netip.MustParseAddrPort("198.51.100.2:6000"),  // 6: another stranger
}

// advFixedToken makes a connect token for srvAddr whose keys and nonce are
// derived from seed, so the packets of its client are the same in every
// run.
func advFixedToken(t testing.TB, clientID uint64, seed byte) []byte {
	t.Helper()
	// The longest a server admits (MaxConnectTokenLifetimeLimit): it
	// outlives any clock step.
	expire := uint64(srvEpoch.Add(MaxConnectTokenLifetimeLimit).Unix()) + 1
	priv := codec.PrivateToken{ClientID: clientID, TimeoutSeconds: -1, NumServerAddresses: 1}
	priv.ServerAddresses[0] = srvAddr
	for i := range priv.ClientToServerKey {
		priv.ClientToServerKey[i] = seed + byte(i)
		priv.ServerToClientKey[i] = seed ^ byte(0x80+i)
	}
	copy(priv.UserData[:], fmt.Sprintf("user %d", clientID))
	ct := codec.ConnectToken{
		ProtocolID: srvProtocol, CreateTimestamp: uint64(srvEpoch.Unix()), ExpireTimestamp: expire,
		TimeoutSeconds: -1, NumServerAddresses: 1,
		ClientToServerKey: priv.ClientToServerKey, ServerToClientKey: priv.ServerToClientKey,
	}
	ct.ServerAddresses[0] = srvAddr
	for i := range ct.Nonce {
		ct.Nonce[i] = seed + byte(3*i)
	}
	if err := codec.WritePrivateToken(ct.PrivateData[:], &priv); err != nil {
		t.Fatal(err)
	}
	key, err := aead.NewTokenKey(testPrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := key.SealPrivateToken(ct.PrivateData[:], srvProtocol, expire, ct.Nonce[:]); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, codec.ConnectTokenBytes)
	if err := codec.WriteConnectToken(out, &ct); err != nil {
		t.Fatal(err)
	}
	return out
}

// advFuzzWorld is the server of one fuzz input with clients A and B
// connected and confirmed (their sequences 0 and 1 used) and C challenged.
type advFuzzWorld struct {
	h        *srvHarness
	a, b, c  *srvPeer
	ia, ib   int
	replayA  ring.Replay // what the server's replay windows of A and B
	replayB  ring.Replay // should hold, for the model
	slotA    advSlot
	slotB    advSlot
	extraTok []byte // token of a fourth client that never connects
}

func advNewFuzzWorld(t *testing.T) *advFuzzWorld {
	h := newSrvHarness(t, ServerConfig{MaxClients: 4, EventQueueSize: 8,
		MaxConnectTokenLifetime: MaxConnectTokenLifetimeLimit, AllowNoTimeoutTokens: true})
	w := &advFuzzWorld{h: h}
	w.a = h.peerWithToken(advFuzzSources[0].String(), advFixedToken(t, 1, 0x10))
	w.b = h.peerWithToken(advFuzzSources[1].String(), advFixedToken(t, 2, 0x20))
	w.c = h.peerWithToken(advFuzzSources[2].String(), advFixedToken(t, 3, 0x30))
	w.extraTok = advFixedToken(t, 4, 0x40)
	w.ia, w.ib = w.a.connect(), w.b.connect()
	w.a.send(w.a.keepAlive())
	w.b.send(w.b.keepAlive())
	w.c.challenged()
	for _, r := range []*ring.Replay{&w.replayA, &w.replayB} {
		r.Reset()
		r.Advance(1)
	}
	w.slotA, w.slotB = advSlotOf(h.s, w.ia), advSlotOf(h.s, w.ib)
	return w
}

// close stops the server; the next input gets a new one.
func (w *advFuzzWorld) close() { w.h.stop() }

// modelKeepAlive reports whether the server must accept pkt from from as a
// keep-alive of A or B (its counters do not record those).
func (w *advFuzzWorld) modelKeepAlive(from netip.AddrPort, pkt []byte) bool {
	var key *aead.PacketKey
	var replay *ring.Replay
	switch from {
	case w.a.addr:
		key, replay = w.a.seal, &w.replayA
	case w.b.addr:
		key, replay = w.b.seal, &w.replayB
	default:
		return false
	}
	if len(pkt) == 0 || pkt[0] == 0 {
		return false
	}
	rp := codec.ReadParams{Role: codec.RoleServer, ProtocolID: srvProtocol, Key: key, Replay: replay}
	var p codec.Packet
	if codec.ReadPacket(append([]byte(nil), pkt...), &rp, &p) != nil {
		return false
	}
	return p.Type == codec.ConnectionKeepAlive
}

// advFuzzResult is what one input did, for the seed test.
type advFuzzResult struct {
	fed, keepAlives, payloads int
}

// advRunIntake feeds data to a fresh world and checks the invariants.
func advRunIntake(t *testing.T, data []byte) advFuzzResult {
	w := advNewFuzzWorld(t)
	defer w.close()
	h, s := w.h, w.h.s
	before := s.Stats()
	var res advFuzzResult
	for rec := 0; rec < advFuzzMaxRecords && len(data) > 0; rec++ {
		op := data[0]
		data = data[1:]
		if op&7 == 7 {
			h.step(time.Duration(op>>3) * 10 * time.Millisecond)
			continue
		}
		n := 0
		if len(data) >= 2 {
			n = int(binary.LittleEndian.Uint16(data)) % (codec.MaxPacketBytes + 1)
			data = data[2:]
		}
		n = min(n, len(data))
		pkt := data[:n]
		data = data[n:]
		from := advFuzzSources[op&7]
		if w.modelKeepAlive(from, pkt) {
			res.keepAlives++
		}
		h.deliver(0, from, pkt)
		res.fed++
	}
	after := s.Stats()
	res.payloads = len(advDrain(h, w.ia)) + len(advDrain(h, w.ib))

	if got := advSlotOf(s, w.ia); got != w.slotA {
		t.Fatalf("client A's slot %d changed from %+v to %+v", w.ia, w.slotA, got)
	}
	if got := advSlotOf(s, w.ib); got != w.slotB {
		t.Fatalf("client B's slot %d changed from %+v to %+v", w.ib, w.slotB, got)
	}
	if n := s.NumConnectedClients(); n != 2 {
		t.Fatalf("%d clients connected, want 2", n)
	}
	if d := after.PacketsIn - before.PacketsIn; d != uint64(res.fed) {
		t.Fatalf("PacketsIn grew by %d; %d datagrams fed", d, res.fed)
	}
	// Every datagram is dropped (once) or has exactly one visible effect.
	accounted := (after.Dropped() - before.Dropped()) +
		(after.ChallengesSent - before.ChallengesSent) + (after.DeniedSent - before.DeniedSent) +
		(after.Connects - before.Connects) + (after.ClientDisconnects - before.ClientDisconnects) +
		uint64(res.keepAlives+res.payloads)
	if accounted != uint64(res.fed) {
		t.Fatalf("%d datagrams fed but %d accounted for (drops %d, keep-alives %d, payloads %d, stats %+v)",
			res.fed, accounted, after.Dropped()-before.Dropped(), res.keepAlives, res.payloads, after)
	}
	if after.SendFailures != before.SendFailures || after.ReadErrors != before.ReadErrors {
		t.Fatalf("send failures %d, read errors %d", after.SendFailures, after.ReadErrors)
	}
	return res
}

func FuzzServerIntake(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x00, 0x12, 0x00, 0x45})
	f.Fuzz(func(t *testing.T, data []byte) {
		advRunIntake(t, data)
	})
}

// advRecord appends one datagram record.
func advRecord(dst []byte, src int, pkt []byte) []byte {
	dst = append(dst, byte(src))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(pkt)))
	return append(dst, pkt...)
}

// advFuzzSeeds builds the committed seed corpus from a world's clients.
func advFuzzSeeds(t *testing.T) map[string][]byte {
	w := advNewFuzzWorld(t)
	defer w.close()
	a, b, c := w.a, w.b, w.c
	seeds := map[string][]byte{}

	var in []byte
	a.seq, b.seq = 2, 2
	in = advRecord(in, 0, a.keepAlive())
	pa := a.payload([]byte("hello from A"))
	in = advRecord(in, 0, pa)
	in = advRecord(in, 1, b.payload(bytes.Repeat([]byte("B"), codec.MaxPayloadBytes)))
	in = advRecord(in, 1, b.keepAlive())
	in = append(in, 7|10<<3)  // 100 ms
	in = advRecord(in, 0, pa) // replayed
	in = advRecord(in, 1, pa) // A's packet from B's address
	seeds["valid-session"] = in

	in = nil
	extra := h2peer(t, w, advFuzzSources[3], w.extraTok)
	in = advRecord(in, 3, extra.request())
	in = advRecord(in, 6, extra.request()) // token reused from another address
	in = advRecord(in, 2, c.request())     // C repeats its request
	in = advRecord(in, 2, c.payload([]byte("early")))
	in = advRecord(in, 0, c.request()) // C's token from A's address
	in = advRecord(in, 5, a.request())
	seeds["requests"] = in

	in = nil
	a.seq, b.seq = 50, 50
	// No disconnect sealed with A's or B's key: the fuzzer would move it
	// to its client's address, where it is a real disconnect.
	in = advRecord(in, 0, advSeal(t, codec.ConnectionDisconnect, 60, c.seal))
	in = advRecord(in, 1, advSeal(t, codec.ConnectionDisconnect, 60, advKey(t, 9)))
	in = advRecord(in, 3, advSeal(t, codec.ConnectionDisconnect, 61, c.seal))
	ka := a.keepAlive()
	in = advRecord(in, 0, ka[:len(ka)-1])
	in = advRecord(in, 0, append(append([]byte(nil), ka...), 0))
	in = advRecord(in, 2, c.disconnect())                  // C is not connected: dropped
	a.challenge = [codec.ChallengeTokenBytes]byte{1, 2, 3} // the real one is random per server
	resp := a.response()
	in = advRecord(in, 0, resp)
	in = advRecord(in, 1, resp)
	seeds["forgeries"] = in

	in = nil
	for p := range 256 {
		if p%17 == 0 {
			junk := make([]byte, 18+p)
			junk[0] = byte(p)
			in = advRecord(in, p%7, junk)
		}
	}
	in = append(in, 0xff)
	in = advRecord(in, 4, make([]byte, codec.RequestPacketBytes))
	seeds["junk"] = in
	return seeds
}

// h2peer is a peer of w's server at addr with token.
func h2peer(t *testing.T, w *advFuzzWorld, addr netip.AddrPort, token []byte) *srvPeer {
	t.Helper()
	return w.h.peerWithToken(addr.String(), token)
}

// TestFuzzServerIntakeSeeds checks that the committed corpus still holds
// packets the clients really sent (they are accepted, not only dropped),
// and rewrites it when ADV_WRITE_FUZZ_SEEDS=1.
func TestFuzzServerIntakeSeeds(t *testing.T) {
	seeds := advFuzzSeeds(t)
	dir := filepath.Join("testdata", "fuzz", "FuzzServerIntake")
	if os.Getenv("ADV_WRITE_FUZZ_SEEDS") == "1" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, in := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", in)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, in := range seeds {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("seed %s missing: %v", name, err)
		}
		if want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", in); string(raw) != want {
			t.Fatalf("seed %s is stale; rerun with ADV_WRITE_FUZZ_SEEDS=1", name)
		}
	}
	res := advRunIntake(t, seeds["valid-session"])
	if res.keepAlives != 2 || res.payloads != 2 {
		t.Fatalf("valid-session seed: %d keep-alives, %d payloads accepted; want 2, 2", res.keepAlives, res.payloads)
	}
	for _, name := range []string{"requests", "forgeries", "junk"} {
		advRunIntake(t, seeds[name])
	}
}

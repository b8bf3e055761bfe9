package engine

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/codec"
)

func TestTokenTable(t *testing.T) {
	var tt tokenTable
	tt.init(2)
	x := netip.MustParseAddrPort("192.0.2.1:1")
	y := netip.MustParseAddrPort("192.0.2.2:1")
	m1, m2, m3 := tokenMAC{1}, tokenMAC{2}, tokenMAC{3}
	steps := []struct {
		mac  tokenMAC
		addr netip.AddrPort
		want bool
	}{
		{m1, x, true},  // new
		{m1, x, true},  // same address again
		{m1, y, false}, // another address
		{m2, y, true},
		{m3, y, true},  // full: forgets m1, the oldest
		{m1, y, true},  // m1 forgotten, so it is new again (forgets m2)
		{m3, x, false}, // m3 still remembered
		{m2, x, true},  // m2 was forgotten
	}
	for k, s := range steps {
		if got := tt.findOrAdd(s.mac, s.addr); got != s.want {
			t.Fatalf("step %d: findOrAdd(%x, %v) = %v, want %v", k, s.mac[0], s.addr, got, s.want)
		}
	}
	if tt.n != 2 || tt.index.len() != 2 {
		t.Fatalf("table holds %d entries, index %d; want 2", tt.n, tt.index.len())
	}
}

// srvRecordedNonce is one (key, nonce) use seen on the wire.
type srvRecordedNonce struct {
	key [codec.KeyBytes]byte
	seq uint64
}

// srvRecord decodes every datagram sent to p, fails on a (key, nonce) pair
// already in seen, and returns the packets.
func srvRecord(t *testing.T, p *srvPeer, seen map[srvRecordedNonce]codec.PacketType) []codec.Packet {
	t.Helper()
	var out []codec.Packet
	for _, raw := range p.h.sent(p.sock, p.addr) {
		pkt, err := p.decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		k := srvRecordedNonce{p.ct.ServerToClientKey, pkt.Sequence}
		if prev, dup := seen[k]; dup {
			t.Fatalf("nonce reuse: %v with sequence %d under a key already used for %v", pkt.Type, pkt.Sequence, prev)
		}
		seen[k] = pkt.Type
		out = append(out, pkt)
	}
	return out
}

func TestServerRestartNoNonceReuse(t *testing.T) {
	seen := map[srvRecordedNonce]codec.PacketType{}
	var token []byte
	var lastGlobal uint64
	var challengeKeys [][32]byte
	now := srvEpoch
	for run := range 2 {
		h := newSrvHarness(t, ServerConfig{})
		h.now = now
		if token == nil {
			token = h.srvToken(1, nil)
		}
		p := h.peerWithToken("192.0.2.1:5000", token)
		p.seq = uint64(run) * 1000 // the client continues its own sequence
		h.deliver(p.sock, p.addr, p.request())
		h.deliver(p.sock, p.addr, p.request()) // repeated at 10 Hz
		pkts := srvRecord(t, p, seen)
		if len(pkts) != 2 {
			t.Fatalf("run %d: %d challenges, want 2", run, len(pkts))
		}
		for _, pkt := range pkts {
			if pkt.Sequence < 1<<63 || pkt.Sequence <= lastGlobal {
				t.Fatalf("run %d: challenge sequence %d not after %d", run, pkt.Sequence, lastGlobal)
			}
			lastGlobal = pkt.Sequence
		}
		h.deliver(p.sock, p.addr, p.response())
		if pkts := srvRecord(t, p, seen); len(pkts) != 1 || pkts[0].Type != codec.ConnectionKeepAlive {
			t.Fatalf("run %d: reply to response %v", run, srvTypes(pkts))
		}
		i := p.index
		for range 5 {
			h.step(100 * time.Millisecond) // keep-alives
			if err := h.s.SendPacket(i, []byte("payload")); err != nil {
				t.Fatal(err)
			}
		}
		h.s.Stop(h.step2())
		// Per step a keep-alive, then keep-alive + payload (the client never
		// confirms), then the disconnects.
		if n := len(srvRecord(t, p, seen)); n != 5*3+NumDisconnectPackets {
			t.Fatalf("run %d: recorded %d session packets", run, n)
		}
		challengeKeys = append(challengeKeys, h.s.challengeID)
		now = h.now
	}
	if challengeKeys[0] == challengeKeys[1] {
		t.Fatal("the restarted server reused the challenge key")
	}
}

// step2 advances the clock a little and returns it (for Stop).
func (h *srvHarness) step2() time.Time {
	h.now = h.now.Add(10 * time.Millisecond)
	return h.now
}

func TestServerTokenSequenceRegistry(t *testing.T) {
	t.Run("reconnect continues the sequence", func(t *testing.T) {
		seen := map[srvRecordedNonce]codec.PacketType{}
		h := newSrvHarness(t, ServerConfig{})
		p := h.peer("192.0.2.1:5000", 1, nil)
		p.connect()
		h.step(time.Second)
		first := srvRecord(t, p, seen)
		last := first[len(first)-1].Sequence
		p.send(p.disconnect())
		p.challenged()
		pkts := p.send(p.response())
		srvExpectTypes(t, "reconnect", pkts, codec.ConnectionKeepAlive)
		if pkts[0].Sequence <= last {
			t.Fatalf("reconnected session starts at %d; the last session reached %d", pkts[0].Sequence, last)
		}
	})
	t.Run("full registry ignores requests", func(t *testing.T) {
		h := newSrvHarness(t, ServerConfig{})
		h.s.registry = newSessionRegistry(1)
		a := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.ExpireSeconds = 10 })
		b := h.peer("192.0.2.2:5000", 2, func(tp *TokenParams) { tp.ExpireSeconds = 60 })
		a.challenged()
		b.send(b.request())
		b.expectNothing("request while the registry is full")
		if got := h.drops(ServerDropRegistryFull); got != 1 {
			t.Fatalf("ServerDropRegistryFull = %d, want 1", got)
		}
		h.step(10 * time.Second) // a's token expires: its entry can go
		b.challenged()
		if h.s.registry.used() != 1 {
			t.Fatalf("registry holds %d tokens, want 1", h.s.registry.used())
		}
	})
	t.Run("one live session per token in the process", func(t *testing.T) {
		other := netip.MustParseAddrPort("10.0.0.2:40000")
		h1 := newSrvHarness(t, ServerConfig{})
		h2 := newSrvHarness(t, ServerConfig{}, other)
		token := h1.srvToken(1, func(tp *TokenParams) { tp.PublicAddresses = []netip.AddrPort{srvAddr, other} })
		h1.peerWithToken("192.0.2.1:5000", token).connect()
		p := h2.peerWithToken("192.0.2.1:5000", token)
		p.challenged()
		p.send(p.response())
		p.expectNothing("second live session with one token")
		if got := h2.drops(ServerDropSessionBusy); got != 1 {
			t.Fatalf("ServerDropSessionBusy = %d, want 1", got)
		}
		h1.s.Stop(h1.now)
	})
}

func TestSessionRegistry(t *testing.T) {
	r := newSessionRegistry(2)
	a, b, c := tokenMAC{1}, tokenMAC{2}, tokenMAC{3}
	if !r.reserve(a, 100, 50) || !r.reserve(b, 200, 50) {
		t.Fatal("reserve failed with room")
	}
	if r.reserve(c, 300, 50) {
		t.Fatal("reserve succeeded in a full registry of unexpired tokens")
	}
	if seq, ok := r.acquire(a); !ok || seq != 0 {
		t.Fatalf("acquire = %d, %v", seq, ok)
	}
	if _, ok := r.acquire(a); ok {
		t.Fatal("acquired a token twice")
	}
	if _, ok := r.acquire(c); ok {
		t.Fatal("acquired a token that was never reserved")
	}
	r.release(a, 42)
	if seq, ok := r.acquire(a); !ok || seq != 42 {
		t.Fatalf("acquire after release = %d, %v; want 42", seq, ok)
	}
	// a is active (never swept even when expired); b expires at 200.
	if r.reserve(c, 300, 250) != true {
		t.Fatal("expired entry not swept")
	}
	if _, ok := r.acquire(b); ok {
		t.Fatal("swept entry still acquirable")
	}
	r.release(a, 10) // a lower value never moves the sequence back
	if seq, _ := r.acquire(a); seq != 42 {
		t.Fatalf("sequence went back to %d", seq)
	}
}

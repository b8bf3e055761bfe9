package engine

import (
	"bytes"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/codec"
)

func TestTokenHistory(t *testing.T) {
	var h tokenHistory
	h.init(2)
	x := netip.MustParseAddrPort("192.0.2.1:1")
	y := netip.MustParseAddrPort("192.0.2.2:1")
	m1, m2, m3 := tokenMAC{1}, tokenMAC{2}, tokenMAC{3}
	steps := []struct {
		op      string // present, consume
		mac     tokenMAC
		addr    netip.AddrPort
		expire  uint64
		now     uint64
		want    historyResult
		consume bool // for op consume: the result
	}{
		{op: "present", mac: m1, addr: x, expire: 100, now: 10, want: historyNew},
		{op: "present", mac: m1, addr: x, expire: 100, now: 11, want: historyRetry},
		{op: "present", mac: m1, addr: y, expire: 100, now: 11, want: historyOtherAddress},
		{op: "consume", mac: m1, consume: true},
		{op: "consume", mac: m1, consume: false}, // not pending any more
		{op: "present", mac: m1, addr: x, expire: 100, now: 12, want: historyConsumed},
		{op: "present", mac: m1, addr: y, expire: 100, now: 12, want: historyConsumed},
		{op: "present", mac: m2, addr: y, expire: 50, now: 12, want: historyNew},
		{op: "present", mac: m3, addr: x, expire: 200, now: 12, want: historyFull}, // nothing evicted
		{op: "present", mac: m1, addr: x, expire: 100, now: 49, want: historyConsumed},
		{op: "present", mac: m3, addr: x, expire: 200, now: 50, want: historyNew},  // m2 expired at 50
		{op: "present", mac: m2, addr: y, expire: 50, now: 50, want: historyFull},  // m2 forgotten, m1 still live
		{op: "present", mac: m2, addr: x, expire: 150, now: 100, want: historyNew}, // m1 expired at 100
	}
	entry := map[tokenMAC]int32{}
	for k, s := range steps {
		switch s.op {
		case "present":
			i, got := h.present(s.mac, s.addr, uint64(s.mac[0]), s.expire, s.now)
			if got != s.want {
				t.Fatalf("step %d: present(%x, %v, expire %d, now %d) = %v, want %v", k, s.mac[0], s.addr, s.expire, s.now, got, s.want)
			}
			if got == historyNew {
				entry[s.mac] = i
			}
		case "consume":
			if got := h.consume(entry[s.mac], s.mac, 12); got != s.consume {
				t.Fatalf("step %d: consume(%x) = %v, want %v", k, s.mac[0], got, s.consume)
			}
		}
	}
	if h.pending.Load() != 2 || h.consumed.Load() != 0 {
		t.Fatalf("%d pending, %d consumed; want 2 and 0", h.pending.Load(), h.consumed.Load())
	}
	if h.consume(entry[m3], m2, 100) {
		t.Fatal("consumed an entry with another token's MAC")
	}
}

// TestTokenHistoryIndex fills and empties a history in a scrambled order,
// so that the index's probe runs wrap and shift back, and checks every
// token stays findable.
func TestTokenHistoryIndex(t *testing.T) {
	const n = 1000
	var h tokenHistory
	h.init(n)
	addr := netip.MustParseAddrPort("192.0.2.1:1")
	macs := make([]tokenMAC, n)
	for i := range macs {
		macs[i] = tokenMAC{byte(i), byte(i >> 8), 7}
		if _, r := h.present(macs[i], addr, uint64(i/PendingTokensPerClientID), uint64(10+i%37), 1); r != historyNew {
			t.Fatalf("token %d: %v", i, r)
		}
	}
	// Expire in steps: every present must still find the live tokens.
	for now := uint64(10); now <= 47; now++ {
		h.sweep(now, n)
		for i, m := range macs {
			_, r := h.present(m, addr, uint64(i/PendingTokensPerClientID), uint64(10+i%37), now)
			live := uint64(10+i%37) > now
			if live && r != historyRetry {
				t.Fatalf("now %d: live token %d: %v", now, i, r)
			}
			if !live && r != historyNew {
				t.Fatalf("now %d: expired token %d: %v, want it new again", now, i, r)
			}
			if !live {
				h.sweep(now, n) // and free it again
			}
		}
	}
}

// FuzzTokenHistory runs random sequences of present, consume, clock and
// sweep steps against a simple model: a map from MAC to state.
func FuzzTokenHistory(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 1, 1, 2, 0, 0, 0})
	f.Add([]byte{0, 1, 1, 0, 2, 2, 0, 3, 3, 3, 3, 3, 0, 1, 1})
	f.Add(bytes.Repeat([]byte{0, 5, 1, 1, 5, 2, 3, 4}, 20))
	f.Fuzz(func(t *testing.T, ops []byte) {
		// Tokens of two client ids: one id can reach its cap (4) before
		// the history (6) is full.
		const size = 6
		type model struct {
			addr     uint8
			expire   uint64
			consumed bool
			entry    int32
		}
		var h tokenHistory
		h.init(size)
		live := map[tokenMAC]*model{}
		now := uint64(100)
		addrOf := func(b byte) netip.AddrPort { return netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, b % 3}), 1) }
		for len(ops) >= 2 {
			op, arg := ops[0]%4, ops[1]
			ops = ops[2:]
			for m, e := range live {
				if e.expire <= now {
					delete(live, m)
				}
			}
			switch op {
			case 0: // present token arg%8 from address arg/8
				mac := tokenMAC{arg % 8}
				expire := now + 1 + uint64(arg%8)
				if e, ok := live[mac]; ok {
					expire = e.expire // a token's expiry is fixed
				}
				id := uint64(mac[0] % 2)
				i, got := h.present(mac, addrOf(arg/8), id, expire, now)
				var want historyResult
				e, ok := live[mac]
				ofID := 0
				for m, e := range live {
					if uint64(m[0]%2) == id && !e.consumed {
						ofID++ // pending: the cap that six entries can reach
					}
				}
				switch {
				case ok && e.consumed:
					want = historyConsumed
				case ok && e.addr != (arg/8)%3:
					want = historyOtherAddress
				case ok:
					want = historyRetry
				case len(live) == size:
					want = historyFull
				case ofID >= PendingTokensPerClientID:
					want = historyClientFull
				default:
					want = historyNew
					live[mac] = &model{addr: (arg / 8) % 3, expire: expire, entry: i}
				}
				if got != want {
					t.Fatalf("present %x from %d at %d: %v, want %v", mac[0], arg/8%3, now, got, want)
				}
				if ok && got == historyRetry && i != e.entry {
					t.Fatalf("retry found entry %d, want %d", i, e.entry)
				}
			case 1: // consume token arg%8
				mac := tokenMAC{arg % 8}
				e, ok := live[mac]
				entry := int32(arg % size)
				if ok {
					entry = e.entry
				}
				want := ok && !e.consumed
				if got := h.consume(entry, mac, now); got != want {
					t.Fatalf("consume %x: %v, want %v", mac[0], got, want)
				}
				if want {
					e.consumed = true
				}
			case 2: // the clock moves
				now += uint64(arg % 4)
			case 3: // a partial sweep
				h.sweep(now, int(arg%size)+1)
			}
			var pending, consumed int64
			for _, e := range live {
				if e.consumed {
					consumed++
				} else {
					pending++
				}
			}
			// Counts may include expired entries not swept yet, never fewer.
			if h.pending.Load() < pending || h.consumed.Load() < consumed || h.pending.Load()+h.consumed.Load() > size {
				t.Fatalf("counts %d pending %d consumed; model %d and %d", h.pending.Load(), h.consumed.Load(), pending, consumed)
			}
		}
	})
}

// The token rules at the server (../shared/spec/token-lifecycle.md), one
// test each.

// TestTokenRuleSameAddressAfterDisconnect: a token that carried a session
// is refused when its client comes back from the same address.
func TestTokenRuleSameAddressAfterDisconnect(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	a.connect()
	a.send(a.disconnect())
	for range 3 {
		a.send(a.request())
		a.expectNothing("the same token again after disconnecting")
	}
	if got := h.drops(ServerDropTokenConsumed); got != 3 {
		t.Fatalf("ServerDropTokenConsumed = %d, want 3", got)
	}
	if st := h.s.Stats(); st.ChallengesSent != 1 || st.Connects != 1 {
		t.Fatalf("%d challenges, %d connects; want 1 each", st.ChallengesSent, st.Connects)
	}
}

// TestTokenRuleOtherAddress: a pending token is refused from any other
// address, and a consumed one from every address.
func TestTokenRuleOtherAddress(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	a.challenged()
	thief := h.peerWithToken("198.51.100.9:6000", a.token)
	thief.send(thief.request())
	thief.expectNothing("pending token from another address")
	if got := h.drops(ServerDropTokenOtherAddress); got != 1 {
		t.Fatalf("ServerDropTokenOtherAddress = %d, want 1", got)
	}
	srvExpectTypes(t, "owner's response", a.send(a.response()), codec.ConnectionKeepAlive)
	a.send(a.disconnect())
	thief.send(thief.request())
	thief.expectNothing("consumed token from another address")
	if got := h.drops(ServerDropTokenConsumed); got != 1 {
		t.Fatalf("ServerDropTokenConsumed = %d, want 1", got)
	}
	if h.s.NumConnectedClients() != 0 || h.s.Stats().Connects != 1 {
		t.Fatalf("%d connected, %d connects", h.s.NumConnectedClients(), h.s.Stats().Connects)
	}
}

// TestTokenRuleRetransmitWhilePending: the client's repeated requests
// during the handshake are answered, with the keys the first one made.
func TestTokenRuleRetransmitWhilePending(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	for range 5 {
		a.challenged()
		h.step(100 * time.Millisecond)
	}
	if h.s.shard0().maps.part.n != 1 {
		t.Fatalf("%d encryption mappings for one client", h.s.shard0().maps.part.n)
	}
	srvExpectTypes(t, "response", a.send(a.response()), codec.ConnectionKeepAlive)
}

// TestTokenRuleRestart: a server ignores tokens that expire at or before
// its start plus MaxConnectTokenLifetime plus ConnectTokenClockSkew (they
// may predate it, or have been used in its start second), before
// decrypting them, and says why in its log once.
func TestTokenRuleRestart(t *testing.T) {
	var logBuf bytes.Buffer
	start := srvEpoch
	h := newSrvHarnessStartedAt(t, start, ServerConfig{Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	early := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.Now = start.Add(-time.Second) })                       // expires start+29
	atStart := h.peer("192.0.2.2:5000", 2, func(tp *TokenParams) { tp.Now = start })                                       // start+30
	inSkew := h.peer("192.0.2.3:5000", 3, func(tp *TokenParams) { tp.Now = start.Add(ConnectTokenClockSkew) })             // start+32: equal is refused
	long := h.peer("192.0.2.4:5000", 4, func(tp *TokenParams) { tp.Now = start.Add(-time.Hour); tp.ExpireSeconds = 7200 }) // issued before, lives longer
	for _, p := range []*srvPeer{early, atStart, inSkew} {
		for range 5 {
			p.send(p.request())
			p.expectNothing("token minted before TokensAdmittedFrom")
		}
	}
	if got := h.drops(ServerDropTokenBeforeStart); got != 15 {
		t.Fatalf("ServerDropTokenBeforeStart = %d, want 15", got)
	}
	long.send(long.request())
	long.expectNothing("a token longer than the lifetime")
	if got := h.drops(ServerDropTokenTooLong); got != 1 {
		t.Fatalf("ServerDropTokenTooLong = %d, want 1", got)
	}
	if h.s.Stats().CodecDrops[codec.ReasonTokenDecrypt] != 0 || h.s.shard0().decrypts.credit != h.s.shard0().decrypts.capacity {
		t.Fatal("a refused token was decrypted or took from the decryption budget")
	}
	if n := strings.Count(logBuf.String(), "restart rule"); n != 1 {
		t.Fatalf("restart rule logged %d times, want once:\n%s", n, logBuf.String())
	}
	// A token minted from TokensAdmittedFrom with the lifetime is admitted.
	h.now = h.s.TokensAdmittedFrom()
	h.peer("192.0.2.5:5000", 5, nil).connect()
}

// TestTokenRuleRestartedServer: a token consumed by one run of a server is
// refused by the next run, whether the next run is a new Server (the
// restart rule) or the same Server stopped and started (the history is
// kept, whatever the token's lifetime).
func TestTokenRuleRestartedServer(t *testing.T) {
	t.Run("new server", func(t *testing.T) {
		h := newSrvHarness(t, ServerConfig{})
		a := h.peer("192.0.2.1:5000", 1, nil)
		a.connect()
		h.stop()
		h2 := newSrvHarnessAt(t, h.now.Add(2*time.Second), ServerConfig{})
		b := h2.peerWithToken(a.addr.String(), a.token)
		b.send(b.request())
		b.expectNothing("token consumed by the previous run")
		if got := h2.drops(ServerDropTokenBeforeStart); got != 1 {
			t.Fatalf("ServerDropTokenBeforeStart = %d, want 1", got)
		}
	})
	t.Run("stop and start", func(t *testing.T) {
		// Whatever the token's lifetime (the bound admits at most 32 s), the
		// restart rule refuses it; the kept history would too.
		for _, lifetime := range []int64{30, 32} {
			h := newSrvHarness(t, ServerConfig{})
			a := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.ExpireSeconds = lifetime })
			a.connect()
			h.stop()
			h.now = h.now.Add(time.Second)
			if err := h.s.Start(); err != nil {
				t.Fatal(err)
			}
			if err := h.s.Start(); err == nil {
				t.Fatal("Start on a running server succeeded")
			}
			a.send(a.request())
			a.expectNothing("token consumed before the stop")
			if got := h.drops(ServerDropTokenBeforeStart); got != 1 {
				t.Fatalf("lifetime %d: ServerDropTokenBeforeStart = %d, want 1", lifetime, got)
			}
			// The restarted server works: a fresh token connects.
			h.now = h.s.TokensAdmittedFrom()
			h.peer("192.0.2.2:5000", 2, func(tp *TokenParams) { tp.Now = h.now }).connect()
		}
	})
}

// TestTokenRuleEntriesFreedAtExpiry: a full history takes new tokens again
// as soon as old ones expire, and only then.
func TestTokenRuleEntriesFreedAtExpiry(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{testHistorySize: 2})
	h.peer("192.0.2.1:5000", 1, nil).challenged() // expires at +30 s
	h.step(10 * time.Second)
	h.peer("192.0.2.2:5000", 2, nil).connect() // +40 s
	h.step(10 * time.Second)
	c := h.peer("192.0.2.3:5000", 3, nil) // +50 s
	d := h.peer("192.0.2.4:5000", 4, nil) // +50 s
	c.send(c.request())
	c.expectNothing("new token with the history full")
	h.step(9 * time.Second)
	c.send(c.request())
	c.expectNothing("new token one second before an entry expires")
	h.step(time.Second) // the first token expires
	c.challenged()
	d.send(d.request())
	d.expectNothing("second new token with one entry freed")
	if got := h.drops(ServerDropTokenHistoryFull); got != 3 {
		t.Fatalf("ServerDropTokenHistoryFull = %d, want 3", got)
	}
	h.step(10 * time.Second) // the second (consumed) token expires too
	d.challenged()
}

// TestTokenRuleMappingExpiresWithToken: handshake state never outlives its
// token, even when the token's timeout (-1) disables the inactivity
// timeout.
func TestTokenRuleMappingExpiresWithToken(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{AllowNoTimeoutTokens: true})
	a := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.TimeoutSeconds = -1 })
	a.challenged()
	h.step(29 * time.Second)
	if h.s.shard0().maps.part.n != 1 {
		t.Fatalf("%d mappings before the token expires, want 1", h.s.shard0().maps.part.n)
	}
	h.step(time.Second)
	if h.s.shard0().maps.part.n != 0 {
		t.Fatalf("%d mappings after the token expired, want 0", h.s.shard0().maps.part.n)
	}
	a.send(a.response())
	a.expectNothing("response after the token expired")
	if h.s.NumConnectedClients() != 0 {
		t.Fatal("a handshake finished after its token expired")
	}
}

// TestServerRestartNoNonceReuse records everything two runs of a server
// send with two tokens, one consumed by each run, and fails on any (key,
// nonce) pair seen twice; challenge sequences keep rising across the runs
// and the challenge key changes.
func TestServerRestartNoNonceReuse(t *testing.T) {
	seen := map[srvRecordedNonce]codec.PacketType{}
	var lastGlobal uint64
	var challengeKeys [][32]byte
	now := srvEpoch
	for run := range 2 {
		h := newSrvHarnessAt(t, now, ServerConfig{})
		peers := []*srvPeer{h.peer("192.0.2.1:5000", 1, nil), h.peer("192.0.2.2:5000", 2, nil)}
		for k, p := range peers {
			h.deliver(p.sock, p.addr, p.request())
			h.deliver(p.sock, p.addr, p.request()) // repeated at 10 Hz
			pkts := srvRecord(t, p, seen)
			if len(pkts) != 2 {
				t.Fatalf("run %d client %d: %d challenges, want 2", run, k, len(pkts))
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
			for range 5 {
				h.step(100 * time.Millisecond) // keep-alives
				if err := h.s.SendPacket(p.index, []byte("payload")); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(srvRecord(t, p, seen)); n < 5*2 {
				t.Fatalf("run %d: recorded %d session packets, want at least 10", run, n)
			}
		}
		h.stop()
		for _, p := range peers {
			pkts := srvRecord(t, p, seen) // keep-alives sent meanwhile, then the disconnects
			if len(pkts) < NumDisconnectPackets || pkts[len(pkts)-1].Type != codec.ConnectionDisconnect {
				t.Fatalf("run %d: %v at the stop", run, srvTypes(pkts))
			}
		}
		challengeKeys = append(challengeKeys, h.s.shard0().challengeID)
		now = h.now.Add(time.Minute)
	}
	if challengeKeys[0] == challengeKeys[1] {
		t.Fatal("the restarted server reused the challenge key")
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

package engine

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/codec"
)

// The rules stricter than the reference (issue 25), one test each.

// newSrvHarnessStartedAt starts a harness's server exactly at start, with
// the clock there (newSrvHarnessAt leaves srvStartGrace between them).
func newSrvHarnessStartedAt(t *testing.T, start time.Time, cfg ServerConfig) *srvHarness {
	t.Helper()
	h := newSrvHarnessAt(t, start.Add(srvStartGrace), cfg)
	h.now = start
	return h
}

// TestTokenRuleExpiryBound: a token that expires later than
// MaxConnectTokenLifetime plus ConnectTokenClockSkew from now is ignored
// before decryption; one at the bound is admitted.
func TestTokenRuleExpiryBound(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	bound := int64((DefaultMaxConnectTokenLifetime + ConnectTokenClockSkew) / time.Second)
	over := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.ExpireSeconds = bound + 1 })
	never := h.peer("192.0.2.2:5000", 2, func(tp *TokenParams) { tp.ExpireSeconds = -1 })
	for _, p := range []*srvPeer{over, never} {
		p.send(p.request())
		p.expectNothing("token longer than the bound")
	}
	if got := h.drops(ServerDropTokenTooLong); got != 2 {
		t.Fatalf("ServerDropTokenTooLong = %d, want 2", got)
	}
	if sh := h.s.shard0(); sh.decrypts.credit != sh.decrypts.capacity || h.s.Stats().HandshakesStarted != 0 {
		t.Fatal("a token over the bound was decrypted")
	}
	// A backend clock ConnectTokenClockSkew ahead of the server's.
	ahead := h.peer("192.0.2.3:5000", 3, func(tp *TokenParams) { tp.Now = h.now.Add(ConnectTokenClockSkew) })
	ahead.connect()
	// The long token is admitted once it expires within the bound; the
	// restart rule keeps it to one run (TestTokenRuleLongTokenAfterRestart).
	h.step(time.Second)
	over.connect()
}

// TestTokenRuleNeverExpiring: a token that never expires is refused
// whatever the lifetime setting, and takes neither handshake state nor a
// history entry.
func TestTokenRuleNeverExpiring(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{MaxConnectTokenLifetime: MaxConnectTokenLifetimeLimit, AllowNoTimeoutTokens: true})
	p := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.ExpireSeconds = -1; tp.TimeoutSeconds = -1 })
	for range 3 {
		p.send(p.request())
		p.expectNothing("a token that never expires")
		h.step(time.Hour)
	}
	st := h.s.Stats()
	if st.Drops[ServerDropTokenTooLong] != 3 || st.TokenHistoryPending != 0 || h.s.shard0().maps.part.n != 0 {
		t.Fatalf("ServerDropTokenTooLong %d, %d pending, %d mappings; want 3, 0, 0",
			st.Drops[ServerDropTokenTooLong], st.TokenHistoryPending, h.s.shard0().maps.part.n)
	}
}

// TestTokenRuleNoTimeout: a token without a timeout (-1) is refused unless
// AllowNoTimeoutTokens.
func TestTokenRuleNoTimeout(t *testing.T) {
	noTimeout := func(tp *TokenParams) { tp.TimeoutSeconds = -1 }
	h := newSrvHarness(t, ServerConfig{})
	p := h.peer("192.0.2.1:5000", 1, noTimeout)
	p.send(p.request())
	p.expectNothing("a token without a timeout")
	if got := h.drops(ServerDropTokenNoTimeout); got != 1 {
		t.Fatalf("ServerDropTokenNoTimeout = %d, want 1", got)
	}
	h = newSrvHarness(t, ServerConfig{AllowNoTimeoutTokens: true})
	h.peer("192.0.2.1:5000", 1, noTimeout).connect()
}

// TestTokenRuleLongTokenAfterRestart: a token issued with a lifetime
// longer than the setting (120 s for 30 s) carries one session, not one
// per run: the expiry bound keeps it out until it expires within
// MaxConnectTokenLifetime+ConnectTokenClockSkew, and the restart rule,
// which adds the same skew, refuses it in every later run.
func TestTokenRuleLongTokenAfterRestart(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	minted := h.now
	a := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.ExpireSeconds = 120 })
	a.send(a.request())
	a.expectNothing("a 120 s token at once")
	h.step(88 * time.Second) // expires in 32 s: within the bound
	a.connect()
	h.stop()
	for _, after := range []time.Duration{0, 500 * time.Millisecond, time.Second} {
		h2 := newSrvHarnessStartedAt(t, h.now.Add(after), ServerConfig{})
		b := h2.peerWithToken(a.addr.String(), a.token)
		for range 10 {
			b.send(b.request())
			b.expectNothing(fmt.Sprintf("the token %v after a restart %v after its session", h2.now.Sub(minted), after))
			h2.step(time.Second)
		}
		if h2.s.Stats().Connects != 0 || h2.s.Stats().HandshakesStarted != 0 {
			t.Fatalf("restart %v later: the token began another session", after)
		}
	}
}

// TestTokenRuleStartSecond: the restart rule counts a token expiring at
// its bound as before the start, so a token minted, used and followed by a
// restart within one second, by a backend in step or up to
// ConnectTokenClockSkew ahead, is refused by the new run; tokens minted
// from TokensAdmittedFrom on are admitted.
func TestTokenRuleStartSecond(t *testing.T) {
	for ahead := time.Duration(0); ahead <= ConnectTokenClockSkew; ahead += time.Second {
		t.Run(fmt.Sprintf("backend %v ahead", ahead), func(t *testing.T) {
			h := newSrvHarness(t, ServerConfig{})
			h.step(400 * time.Millisecond)
			a := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.Now = h.now.Add(ahead) })
			a.connect()
			h.stop()
			restart := h.now.Add(300 * time.Millisecond) // the same second
			h2 := newSrvHarnessStartedAt(t, restart, ServerConfig{})
			b := h2.peerWithToken(a.addr.String(), a.token)
			b.send(b.request())
			b.expectNothing("a token used in the second the server restarted")
			if got := h2.drops(ServerDropTokenBeforeStart); got != 1 {
				t.Fatalf("ServerDropTokenBeforeStart = %d, want 1", got)
			}
		})
	}
	// The cost: tokens minted before TokensAdmittedFrom (the start second
	// and ConnectTokenClockSkew after it) are refused, later ones admitted.
	start := srvEpoch.Add(300 * time.Millisecond)
	h := newSrvHarnessStartedAt(t, start, ServerConfig{})
	from := h.s.TokensAdmittedFrom()
	if want := srvEpoch.Add(ConnectTokenClockSkew + time.Second); !from.Equal(want) {
		t.Fatalf("TokensAdmittedFrom %v, want %v", from, want)
	}
	h.step(from.Sub(h.now) - time.Millisecond)
	late := h.peer("192.0.2.2:5000", 2, nil)
	late.send(late.request())
	late.expectNothing("a token minted before TokensAdmittedFrom")
	h.step(time.Millisecond)
	h.peer("192.0.2.3:5000", 3, nil).connect()
}

// TestTokenRulePerClientIDCap: one client id holds at most
// PendingTokensPerClientID pending history entries, and
// TokenHistoryPerClientID in all; its next token is refused until one of
// them expires, and other ids are not affected.
func TestTokenRulePerClientIDCap(t *testing.T) {
	addr := func(k int) string { return fmt.Sprintf("192.0.2.%d:5000", 1+k) }
	t.Run("pending", func(t *testing.T) {
		h := newSrvHarness(t, ServerConfig{MaxClients: 2})
		first := h.peer(addr(0), 7, nil)
		first.connect() // consumed: not pending
		first.send(first.disconnect())
		for k := 1; k <= PendingTokensPerClientID; k++ {
			h.peer(addr(k), 7, nil).challenged()
		}
		h.step(time.Second)
		extra := h.peer(addr(PendingTokensPerClientID+1), 7, nil)
		extra.send(extra.request())
		extra.expectNothing("a token over the client id's pending share")
		if got := h.drops(ServerDropTokenClientLimit); got != 1 {
			t.Fatalf("ServerDropTokenClientLimit = %d, want 1", got)
		}
		h.peer(addr(PendingTokensPerClientID+2), 8, nil).challenged() // another id
		h.step(29 * time.Second)                                      // the first ones expire
		extra.challenged()
	})
	t.Run("all", func(t *testing.T) {
		h := newSrvHarness(t, ServerConfig{MaxClients: 2})
		for range TokenHistoryPerClientID {
			p := h.peer(addr(0), 7, nil)
			p.connect()
			p.send(p.disconnect())
		}
		h.step(time.Second)
		extra := h.peer(addr(0), 7, nil)
		extra.send(extra.request())
		extra.expectNothing("a token over the client id's share")
		if got := h.drops(ServerDropTokenClientLimit); got != 1 {
			t.Fatalf("ServerDropTokenClientLimit = %d, want 1", got)
		}
		h.step(29 * time.Second) // the first sessions' tokens expire
		extra.challenged()
	})
}

// TestTokenRuleMinHistorySize: a small server still remembers
// MinTokenHistorySize tokens (of MinTokenHistorySize /
// PendingTokensPerClientID ids), and the setting refuses less.
func TestTokenRuleMinHistorySize(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{MaxClients: 1})
	if got := h.s.Stats().TokenHistorySize; got != MinTokenHistorySize {
		t.Fatalf("a one-slot server's history holds %d, want %d", got, MinTokenHistorySize)
	}
	// Fill it to one entry short of full, with ids under their share: the
	// last one is still taken.
	var id uint64
	for i := range MinTokenHistorySize - 1 {
		if i%PendingTokensPerClientID == 0 {
			id++
		}
		h.deliverRequestFor(id, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), 5000))
	}
	if st := h.s.Stats(); st.TokenHistoryPending != MinTokenHistorySize-1 {
		t.Fatalf("%d pending after %d tokens", st.TokenHistoryPending, MinTokenHistorySize-1)
	}
	h.peer("192.0.2.1:5000", id, nil).challenged() // its fourth
	cfg := ServerConfig{PrivateKey: testPrivateKey, Manual: true, TokenHistorySize: MinTokenHistorySize - 1}
	if err := cfg.normalize(1); err == nil {
		t.Fatalf("TokenHistorySize %d accepted", MinTokenHistorySize-1)
	}
}

// deliverRequestFor presents a fresh token of id from from.
func (h *srvHarness) deliverRequestFor(id uint64, from netip.AddrPort) {
	p := h.peerWithToken(from.String(), h.srvToken(id, nil))
	h.conns[0].Push(from, p.request())
	h.update()
	h.conns[0].Take(from)
	if st := h.s.Stats(); st.Drops[ServerDropTokenHistoryFull]+st.Drops[ServerDropTokenClientLimit] != 0 || st.CodecDrops[codec.ReasonTokenDecrypt] != 0 {
		h.t.Fatalf("token of %d from %v refused: %+v", id, from, st.Drops)
	}
}

// The expiry bound's refusals are logged once a run, naming the lifetime a
// backend must keep to, so that a misconfigured backend shows in the log
// and not only in the metrics.
func TestTokenRuleExpiryBoundLogged(t *testing.T) {
	var logs bytes.Buffer
	h := newSrvHarness(t, ServerConfig{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	bound := int64((DefaultMaxConnectTokenLifetime + ConnectTokenClockSkew) / time.Second)
	for k := range 3 {
		p := h.peer(fmt.Sprintf("192.0.2.%d:5000", k+1), uint64(k+1), func(tp *TokenParams) { tp.ExpireSeconds = bound + 60 })
		p.send(p.request())
	}
	if n := strings.Count(logs.String(), "expires later than MaxConnectTokenLifetime"); n != 1 || !strings.Contains(logs.String(), "max_connect_token_lifetime=30s") {
		t.Fatalf("%d log lines about over-long tokens; want 1 naming the lifetime:\n%s", n, logs.String())
	}
}

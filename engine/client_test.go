package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

const tick = 10 * time.Millisecond

func TestClientStateNumbersAndNames(t *testing.T) {
	for _, tc := range []struct {
		s    ClientState
		num  int
		name string
	}{
		{ConnectionRequestUnanswered, -7, "connection request unanswered"},
		{ConnectTokenExpired, -6, "connect token expired"},
		{InvalidConnectToken, -5, "invalid connect token"},
		{ConnectionTimedOut, -4, "connection timed out"},
		{ConnectionResponseTimedOut, -3, "connection response timed out"},
		{ConnectionRequestTimedOut, -2, "connection request timed out"},
		{ConnectionDenied, -1, "connection denied"},
		{Disconnected, 0, "disconnected"},
		{SendingConnectionRequest, 1, "sending connection request"},
		{SendingConnectionResponse, 2, "sending connection response"},
		{Connected, 3, "connected"},
		{ClientState(4), 4, "ClientState(4)"},
		{ClientState(-8), -8, "ClientState(-8)"},
	} {
		if int(tc.s) != tc.num || tc.s.String() != tc.name {
			t.Errorf("state %d %q, want %d %q", int(tc.s), tc.s, tc.num, tc.name)
		}
		if tc.s.IsError() != (tc.num < 0) {
			t.Errorf("%v.IsError() = %v", tc.s, tc.s.IsError())
		}
	}
	var zero Client
	if zero.State() != Disconnected {
		t.Errorf("initial state %v, want disconnected", zero.State())
	}
}

func TestClientConnects(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctAccept)
	s := h.servers[0]
	h.connect(h.token(5, 30))
	if got := h.client.ServerAddress(); got != s.addr {
		t.Fatalf("server address %v, want %v", got, s.addr)
	}
	h.runUntil(tick, 5*time.Second, h.inState(Connected))
	want := []ClientState{SendingConnectionRequest, SendingConnectionResponse, Connected}
	if !slices.Equal(h.states, want) {
		t.Fatalf("states %v, want %v", h.states, want)
	}
	if s.got[codec.ConnectionRequest] == 0 || s.goodResponse == 0 {
		t.Fatalf("server got %d requests and %d valid responses", s.got[codec.ConnectionRequest], s.goodResponse)
	}
	if h.client.ClientIndex() != 3 || h.client.MaxClients() != 16 {
		t.Fatalf("client index %d max clients %d, want 3 and 16", h.client.ClientIndex(), h.client.MaxClients())
	}

	// Payloads both ways.
	if err := h.client.SendPacket([]byte("hello server")); err != nil {
		t.Fatal(err)
	}
	h.step(tick)
	if len(s.payloads) != 1 || string(s.payloads[0]) != "hello server" {
		t.Fatalf("server payloads %q", s.payloads)
	}
	s.sendPayload([]byte("hello client"))
	h.step(tick)
	buf := make([]byte, codec.MaxPayloadBytes)
	n, seq, ok := h.client.ReceivePacket(buf)
	if !ok || string(buf[:n]) != "hello client" || seq != s.seq-1 {
		t.Fatalf("ReceivePacket = %q, %d, %v; want hello client, %d", buf[:n], seq, ok, s.seq-1)
	}
	if _, _, ok := h.client.ReceivePacket(buf); ok {
		t.Fatal("second ReceivePacket returned a packet")
	}
	st := h.client.Stats()
	if st.PacketsIn == 0 || st.PacketsOut == 0 || st.BytesIn == 0 || st.BytesOut == 0 {
		t.Fatalf("stats not counted: %+v", st)
	}
	if h.stray != 0 {
		t.Fatalf("%d datagrams sent to unknown addresses", h.stray)
	}
}

// patchToken returns a copy of a valid token with f applied.
func patchToken(tok []byte, f func([]byte) []byte) []byte {
	return f(append([]byte(nil), tok...))
}

func TestClientInvalidConnectToken(t *testing.T) {
	const (
		createOff   = codec.VersionInfoBytes + 8
		expireOff   = createOff + 8
		numAddrsOff = expireOff + 8 + codec.ConnectTokenNonceBytes + codec.PrivateTokenBytes + 4
		addrTypeOff = numAddrsOff + 4
	)
	h := newClientHarness(t, ClientConfig{}, ctAccept)
	good := h.token(5, 30)
	for _, tc := range []struct {
		name  string
		patch func([]byte) []byte
		why   string
	}{
		{"zero addresses", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[numAddrsOff:], 0); return b }, "address count"},
		{"33 addresses", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[numAddrsOff:], 33); return b }, "address count"},
		{"bad address type", func(b []byte) []byte { b[addrTypeOff] = 3; return b }, "address type"},
		{"address type none", func(b []byte) []byte { b[addrTypeOff] = 0; return b }, "address type"},
		{"create after expire", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[createOff:], binary.LittleEndian.Uint64(b[expireOff:])+1)
			return b
		}, "create timestamp"},
		{"bad version", func(b []byte) []byte { b[0] = 'X'; return b }, "version"},
		{"short", func(b []byte) []byte { return b[:codec.ConnectTokenBytes-1] }, "2047 bytes"},
		{"long", func(b []byte) []byte { return append(b, 0) }, "2049 bytes"},
		{"empty", func([]byte) []byte { return nil }, "0 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newClientHarness(t, ClientConfig{}, ctAccept)
			err := h.client.Connect(patchToken(good, tc.patch), h.now)
			if !errors.Is(err, ErrInvalidConnectToken) || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("Connect error %v; want ErrInvalidConnectToken saying %q", err, tc.why)
			}
			if h.client.State() != InvalidConnectToken {
				t.Fatalf("state %v, want invalid connect token", h.client.State())
			}
			h.step(tick)
			if h.conn.Stats().Written != 0 || h.servers[0].got[codec.ConnectionRequest] != 0 {
				t.Fatal("client sent packets with an invalid token")
			}
		})
	}
	// The same client connects with a good token afterwards.
	h.connected(good)
}

func TestClientFallsBackToNextServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		modes []ctServerMode
	}{
		{"denied, denied", []ctServerMode{ctDeny, ctDeny, ctAccept}},
		{"silent, silent", []ctServerMode{ctSilent, ctSilent, ctAccept}},
		{"denied, silent", []ctServerMode{ctDeny, ctSilent, ctAccept}},
		{"no response accepted, denied", []ctServerMode{ctChallengeOnly, ctDeny, ctAccept}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newClientHarness(t, ClientConfig{}, tc.modes...)
			h.connect(h.token(1, 60))
			// Each server is tried in order: server i+1 hears nothing until
			// the client gave up on server i.
			for i, s := range h.servers {
				if !h.runUntil(tick, 3*time.Second, func() bool { return h.client.ServerAddress() == s.addr && s.got[codec.ConnectionRequest] > 0 }) {
					t.Fatalf("server %d never got a request; state %v at %v", i, h.client.State(), h.client.ServerAddress())
				}
				for _, later := range h.servers[i+1:] {
					if later.got[codec.ConnectionRequest] != 0 {
						t.Fatalf("server %v got a request while server %d was being tried", later.addr, i)
					}
				}
			}
			if !h.runUntil(tick, 3*time.Second, h.inState(Connected)) {
				t.Fatalf("state %v, want connected", h.client.State())
			}
			if h.client.ServerAddress() != h.servers[2].addr || h.client.ClientIndex() != 5 {
				t.Fatalf("connected to %v index %d, want the third server, index 5", h.client.ServerAddress(), h.client.ClientIndex())
			}
			for i, s := range h.states[:len(h.states)-1] {
				if s.IsError() || s == Disconnected {
					t.Fatalf("state %d on the way was %v: a fallback must not pass through an error state (%v)", i, s, h.states)
				}
			}
		})
	}
}

func TestClientConnectionDenied(t *testing.T) {
	for _, n := range []int{1, 3} {
		modes := make([]ctServerMode, n)
		for i := range modes {
			modes[i] = ctDeny
		}
		h := newClientHarness(t, ClientConfig{}, modes...)
		h.connect(h.token(5, 60))
		if !h.runUntil(tick, time.Second, func() bool { return h.client.State().IsError() }) {
			t.Fatalf("%d servers: state %v", n, h.client.State())
		}
		if h.client.State() != ConnectionDenied {
			t.Fatalf("%d servers: state %v, want connection denied", n, h.client.State())
		}
		for _, s := range h.servers {
			if s.got[codec.ConnectionRequest] == 0 {
				t.Fatalf("%d servers: server %v was not tried", n, s.addr)
			}
		}
		if h.client.ServerAddress().IsValid() {
			t.Fatal("server address kept after failing")
		}
	}
}

func TestClientDeniedWhileSendingResponse(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctChallengeOnly)
	h.connect(h.token(5, 60))
	h.runUntil(tick, time.Second, h.inState(SendingConnectionResponse))
	h.servers[0].sendDenied()
	h.step(tick)
	if h.client.State() != ConnectionDenied {
		t.Fatalf("state %v, want connection denied", h.client.State())
	}
}

func TestClientConnectionRequestTimedOut(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout int32
		at      time.Duration // when the client gives up
		want    ClientState
	}{
		{"timeout 2s", 2, 2*time.Second + tick, ConnectionRequestTimedOut},
		{"timeout 0 never completes", 0, tick, ConnectionRequestTimedOut},
		{"negative timeout disables it; the token expires", -1, 10 * time.Second, ConnectTokenExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newClientHarness(t, ClientConfig{NoChallengeTimeout: -1}, ctSilent) // the standard's timers
			h.connect(h.token(tc.timeout, 10))
			h.client.Update(h.now)
			for elapsed := time.Duration(0); elapsed+tick < tc.at; elapsed += tick {
				h.step(tick)
				if h.client.State() != SendingConnectionRequest {
					t.Fatalf("after %v: state %v, still want sending connection request", elapsed+tick, h.client.State())
				}
			}
			h.step(tick)
			if h.client.State() != tc.want {
				t.Fatalf("after %v: state %v, want %v", tc.at, h.client.State(), tc.want)
			}
		})
	}
}

func TestClientConnectionResponseTimedOut(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctChallengeOnly)
	h.connect(h.token(2, 60))
	h.runUntil(tick, time.Second, h.inState(SendingConnectionResponse))
	entered := h.now
	h.runUntil(tick, 5*time.Second, func() bool { return h.client.State() != SendingConnectionResponse })
	if h.client.State() != ConnectionResponseTimedOut {
		t.Fatalf("state %v, want connection response timed out", h.client.State())
	}
	if d := h.now.Sub(entered); d <= 2*time.Second || d > 2*time.Second+2*tick {
		t.Fatalf("timed out %v after the challenge, want just over 2s", d)
	}
}

func TestClientConnectionTimedOut(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctAccept)
	h.connected(h.token(2, 60))
	s := h.servers[0]
	// While the server sends keep-alives the client stays connected well
	// past the timeout.
	for i := range 500 {
		if i%10 == 0 {
			s.sendKeepAlive()
		}
		h.step(tick)
	}
	if h.client.State() != Connected {
		t.Fatalf("state %v after 5s of keep-alives, want connected", h.client.State())
	}
	// Silence: timed out just after 2s.
	silent := h.now
	h.runUntil(tick, 5*time.Second, func() bool { return h.client.State() != Connected })
	if h.client.State() != ConnectionTimedOut {
		t.Fatalf("state %v, want connection timed out", h.client.State())
	}
	if d := h.now.Sub(silent); d <= 2*time.Second-10*tick || d > 2*time.Second+2*tick {
		t.Fatalf("timed out after %v of silence, want about 2s", d)
	}
	if h.client.ClientIndex() != 0 || h.client.MaxClients() != 0 {
		t.Fatal("client index kept after timing out")
	}
}

func TestClientConnectTokenExpired(t *testing.T) {
	t.Run("across fallbacks", func(t *testing.T) {
		// Timeout 2s, life 5s, three silent servers: the first two time out
		// (at about 2s and 4s) and the token expires while the third is
		// tried, at 5s after Connect.
		h := newClientHarness(t, ClientConfig{NoChallengeTimeout: -1}, ctSilent, ctSilent, ctSilent)
		h.connect(h.token(2, 5))
		start := h.now
		h.runUntil(tick, 10*time.Second, func() bool { return h.client.State().IsError() })
		if h.client.State() != ConnectTokenExpired {
			t.Fatalf("state %v, want connect token expired", h.client.State())
		}
		if d := h.now.Sub(start); d != 5*time.Second {
			t.Fatalf("expired %v after Connect, want 5s", d)
		}
		if h.servers[2].got[codec.ConnectionRequest] == 0 {
			t.Fatal("third server not tried before the token expired")
		}
	})
	t.Run("life measured from connect time", func(t *testing.T) {
		// Created 1 minute ago with a 30s life: by the client's clock the
		// token has expired, but the client measures its life from Connect
		// (clocks of web backend and client differ).
		h := newClientHarness(t, ClientConfig{NoChallengeTimeout: -1}, ctSilent)
		h.connect(h.tokenAt(-1, 30, h.now.Add(-time.Minute)))
		start := h.now
		h.runUntil(tick, time.Minute, func() bool { return h.client.State().IsError() })
		if h.client.State() != ConnectTokenExpired || h.now.Sub(start) != 30*time.Second {
			t.Fatalf("state %v after %v, want connect token expired after 30s", h.client.State(), h.now.Sub(start))
		}
	})
	t.Run("sending response", func(t *testing.T) {
		h := newClientHarness(t, ClientConfig{}, ctChallengeOnly)
		h.connect(h.token(-1, 3))
		h.runUntil(tick, 10*time.Second, func() bool { return h.client.State().IsError() })
		if h.client.State() != ConnectTokenExpired || h.servers[0].goodResponse == 0 {
			t.Fatalf("state %v after %d responses, want connect token expired", h.client.State(), h.servers[0].goodResponse)
		}
	})
	t.Run("not once connected", func(t *testing.T) {
		h := newClientHarness(t, ClientConfig{}, ctAccept)
		h.connected(h.token(-1, 3))
		for range 1000 {
			h.step(tick)
		}
		if h.client.State() != Connected {
			t.Fatalf("state %v 10s after a 3s token connected, want connected", h.client.State())
		}
	})
}

func TestClientServerDisconnect(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctAccept)
	h.connected(h.token(5, 60))
	s := h.servers[0]
	s.sendDisconnect()
	h.step(tick)
	if h.client.State() != Disconnected {
		t.Fatalf("state %v, want disconnected", h.client.State())
	}
	if h.client.ClientIndex() != 0 || h.client.ServerAddress().IsValid() {
		t.Fatal("connection data kept after the server disconnected")
	}
	// Nothing more is sent or accepted.
	written := h.conn.Stats().Written
	s.sendPayload([]byte("late"))
	for range 20 {
		h.step(tick)
	}
	if h.conn.Stats().Written != written {
		t.Fatal("client sent packets after the server disconnected it")
	}
	if _, _, ok := h.client.ReceivePacket(make([]byte, 1200)); ok {
		t.Fatal("payload accepted after disconnect")
	}
	if h.client.Stats().Drops[ClientDropNotConnecting] != 1 {
		t.Fatalf("drops %v, want one not-connecting drop", h.client.Stats().Drops)
	}
}

func TestClientDisconnectSendsRedundantPackets(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctAccept)
	h.connected(h.token(5, 60))
	s := h.servers[0]
	before := len(s.seqs)
	h.client.Disconnect(h.now)
	if h.client.State() != Disconnected {
		t.Fatalf("state %v, want disconnected", h.client.State())
	}
	h.deliver()
	if s.got[codec.ConnectionDisconnect] != NumDisconnectPackets {
		t.Fatalf("server got %d disconnect packets, want %d", s.got[codec.ConnectionDisconnect], NumDisconnectPackets)
	}
	seqs := s.seqs[before:]
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("disconnect sequences %v are not consecutive", seqs)
		}
	}
	// Disconnecting again sends nothing.
	h.client.Disconnect(h.now)
	h.deliver()
	if s.got[codec.ConnectionDisconnect] != NumDisconnectPackets {
		t.Fatal("Disconnect on a disconnected client sent packets")
	}
	// Close ends a session with the redundant disconnects too (as the
	// reference's client does when destroyed) and leaves the caller's
	// conn open.
	s.recvKey = nil
	h.connected(h.token(5, 60))
	if err := h.client.Close(); err != nil || h.client.State() != Disconnected {
		t.Fatalf("Close: %v, state %v", err, h.client.State())
	}
	h.deliver()
	if s.got[codec.ConnectionDisconnect] != 2*NumDisconnectPackets || h.conn.Closed() {
		t.Fatalf("Close sent %d disconnect packets (want %d) or closed the caller's conn",
			s.got[codec.ConnectionDisconnect]-NumDisconnectPackets, NumDisconnectPackets)
	}
}

// countSent counts the client's packets of type typ heard by s over one
// second of fake time in 10 ms ticks.
func countSent(h *clientHarness, s *ctServer, typ codec.PacketType) int {
	before := s.got[typ]
	for range 100 {
		h.step(tick)
	}
	return s.got[typ] - before
}

func TestClientSendRate(t *testing.T) {
	t.Run("requests", func(t *testing.T) {
		h := newClientHarness(t, ClientConfig{}, ctSilent)
		h.connect(h.token(5, 60))
		if n := countSent(h, h.servers[0], codec.ConnectionRequest); n != 10 {
			t.Fatalf("%d requests in 1s, want 10", n)
		}
	})
	t.Run("responses", func(t *testing.T) {
		h := newClientHarness(t, ClientConfig{}, ctChallengeOnly)
		h.connect(h.token(5, 60))
		h.runUntil(tick, time.Second, h.inState(SendingConnectionResponse))
		if n := countSent(h, h.servers[0], codec.ConnectionResponse); n != 10 {
			t.Fatalf("%d responses in 1s, want 10", n)
		}
		if h.servers[0].got[codec.ConnectionRequest] > 2 {
			t.Fatalf("%d requests sent after the challenge", h.servers[0].got[codec.ConnectionRequest])
		}
	})
	t.Run("keep-alives when idle", func(t *testing.T) {
		h := newClientHarness(t, ClientConfig{}, ctAccept)
		h.connected(h.token(5, 60))
		if n := countSent(h, h.servers[0], codec.ConnectionKeepAlive); n != 10 {
			t.Fatalf("%d keep-alives in 1s, want 10", n)
		}
	})
	t.Run("no keep-alives while sending payloads", func(t *testing.T) {
		h := newClientHarness(t, ClientConfig{}, ctAccept)
		h.connected(h.token(5, 60))
		s := h.servers[0]
		before := s.got[codec.ConnectionKeepAlive]
		for i := range 100 {
			if i%5 == 0 {
				if err := h.client.SendPacket([]byte{byte(i)}); err != nil {
					t.Fatal(err)
				}
			}
			h.step(tick)
		}
		if n := s.got[codec.ConnectionKeepAlive] - before; n > 1 {
			t.Fatalf("%d keep-alives while sending payloads every 50ms", n)
		}
		if len(s.payloads) != 20 {
			t.Fatalf("server got %d payloads, want 20", len(s.payloads))
		}
	})
}

func TestClientDropsPayloadBeforeConnected(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctChallengeOnly)
	h.connect(h.token(5, 60))
	h.runUntil(tick, time.Second, h.inState(SendingConnectionResponse))
	s := h.servers[0]
	s.sendPayload([]byte("too early"))
	early := append([]byte(nil), s.last...)
	h.step(tick)
	if h.client.Stats().Drops[ClientDropBeforeConnected] != 1 {
		t.Fatalf("drops %v, want one payload-before-connected drop", h.client.Stats().Drops)
	}
	s.sendKeepAlive()
	h.step(tick)
	if h.client.State() != Connected {
		t.Fatalf("state %v, want connected", h.client.State())
	}
	if _, _, ok := h.client.ReceivePacket(make([]byte, 1200)); ok {
		t.Fatal("a payload from before connected was delivered")
	}
	// The dropped payload still advanced the replay window (errata): sent
	// again now, it is a replay.
	h.conn.Push(s.addr, early)
	h.step(tick)
	if _, _, ok := h.client.ReceivePacket(make([]byte, 1200)); ok {
		t.Fatal("the early payload was delivered when replayed after connecting")
	}
	if h.client.Stats().CodecDrops[codec.ReasonReplayed] != 1 {
		t.Fatalf("codec drops %v, want one replay", h.client.Stats().CodecDrops)
	}
}

func TestClientDropsReplayedPackets(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctAccept)
	h.connected(h.token(5, 60))
	s := h.servers[0]
	buf := make([]byte, 1200)
	s.sendPayload([]byte("once"))
	s.resend()
	h.step(tick)
	if _, _, ok := h.client.ReceivePacket(buf); !ok {
		t.Fatal("payload not delivered")
	}
	if _, _, ok := h.client.ReceivePacket(buf); ok {
		t.Fatal("replayed payload delivered")
	}
	s.sendDisconnect()
	disconnect := append([]byte(nil), s.last...)
	dropInbox(h.conn) // the disconnect is held back for later
	// A newer payload, replayed twice, is dropped twice.
	s.sendPayload([]byte("x"))
	s.resend()
	s.resend()
	h.step(tick)
	if got := h.client.Stats().CodecDrops[codec.ReasonReplayed]; got != 3 {
		t.Fatalf("%d replays dropped, want 3", got)
	}
	// The held-back disconnect is older than the payload but was never
	// received: the window accepts it.
	h.conn.Push(s.addr, disconnect)
	h.step(tick)
	if h.client.State() != Disconnected {
		t.Fatalf("state %v: a fresh disconnect inside the window must be accepted", h.client.State())
	}
}

func TestClientIgnoresOtherAddresses(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctChallengeOnly, ctAccept)
	s1, s2 := h.servers[0], h.servers[1]
	h.connect(h.token(5, 60))
	h.step(tick)
	// Server 2 (which has the same session keys) answers while the client
	// talks to server 1: its challenge is ignored.
	s2.recvKey, s2.sendKey, s2.priv = s1.recvKey, s1.sendKey, s1.priv
	dropInbox(h.conn) // hold back server 1's challenge
	s2.sendChallenge()
	s2.sendDenied()
	h.step(tick)
	if h.client.State() != SendingConnectionRequest || h.client.ServerAddress() != s1.addr {
		t.Fatalf("state %v at %v after packets from another server", h.client.State(), h.client.ServerAddress())
	}
	if got := h.client.Stats().Drops[ClientDropOtherAddress]; got != 2 {
		t.Fatalf("%d other-address drops, want 2", got)
	}
	// Now connected to server 1; keep-alive, payload and disconnect from a
	// stranger (same keys, other address) change nothing.
	h.runUntil(tick, time.Second, h.inState(SendingConnectionResponse))
	s1.sendKeepAlive()
	h.step(tick)
	if h.client.State() != Connected {
		t.Fatalf("state %v, want connected", h.client.State())
	}
	s2.seq = 100
	s2.sendPayload([]byte("stranger"))
	s2.sendDisconnect()
	h.step(tick)
	if h.client.State() != Connected {
		t.Fatalf("state %v after a stranger's disconnect, want connected", h.client.State())
	}
	if _, _, ok := h.client.ReceivePacket(make([]byte, 1200)); ok {
		t.Fatal("a stranger's payload was delivered")
	}
	if got := h.client.Stats().Drops[ClientDropOtherAddress]; got != 4 {
		t.Fatalf("%d other-address drops, want 4", got)
	}
}

func TestClientSequenceContinuesOnReconnect(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctAccept)
	s := h.servers[0]
	tokA := h.token(5, 60)
	h.connected(tokA)
	// The request packets used sequences too (errata): the first response
	// carries the number of requests sent before it.
	if s.seqs[0] != uint64(s.got[codec.ConnectionRequest]) {
		t.Fatalf("first response sequence %d after %d requests", s.seqs[0], s.got[codec.ConnectionRequest])
	}
	for range 5 {
		if err := h.client.SendPacket([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	h.client.Disconnect(h.now)
	h.deliver()
	last := s.seqs[len(s.seqs)-1]

	// Same token, same Client: the sequence continues, so no nonce repeats
	// under the token's client-to-server key.
	s.recvKey, s.seq = nil, 0
	s.seqs = nil
	h.connected(tokA)
	if s.seqs[0] <= last {
		t.Fatalf("reconnect with the same token sent sequence %d, want > %d", s.seqs[0], last)
	}

	// A new token starts again from 0.
	h.client.Disconnect(h.now)
	s.recvKey, s.seq = nil, 0
	s.seqs = nil
	reqs := s.got[codec.ConnectionRequest]
	h.connected(h.token(5, 60))
	if want := uint64(s.got[codec.ConnectionRequest] - reqs); s.seqs[0] != want {
		t.Fatalf("new token: first response sequence %d, want %d", s.seqs[0], want)
	}

	// And token A, used again after another token, still continues.
	h.client.Disconnect(h.now)
	s.recvKey, s.seq = nil, 0
	s.seqs = nil
	h.connected(tokA)
	if s.seqs[0] <= last {
		t.Fatalf("third use of token A sent sequence %d, want > %d", s.seqs[0], last)
	}
}

func TestClientLoopback(t *testing.T) {
	type sent struct {
		index   int
		payload string
		seq     uint64
	}
	var got []sent
	var changes []ClientState
	c, err := NewClient(ClientConfig{
		SendLoopbackPacket: func(i int, p []byte, seq uint64) { got = append(got, sent{i, string(p), seq}) },
		OnStateChange:      func(_, n ClientState) { changes = append(changes, n) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ProcessLoopbackPacket([]byte("before"), 0); !errors.Is(err, ErrClientNotLoopback) || c.Stats().Drops[ClientDropLoopbackPayload] != 1 {
		t.Fatal("loopback payload accepted by a client not in loopback mode")
	}
	for _, bad := range [][2]int{{-1, 4}, {4, 4}, {0, 0}} {
		if err := c.ConnectLoopback(bad[0], bad[1]); err == nil {
			t.Fatalf("ConnectLoopback(%d, %d) accepted", bad[0], bad[1])
		}
	}
	if err := c.ConnectLoopback(2, 8); err != nil {
		t.Fatal(err)
	}
	if !c.IsLoopback() || c.State() != Connected || c.ClientIndex() != 2 || c.MaxClients() != 8 {
		t.Fatalf("loopback %v state %v index %d max %d", c.IsLoopback(), c.State(), c.ClientIndex(), c.MaxClients())
	}
	if err := c.ConnectLoopback(1, 8); !errors.Is(err, ErrClientLoopback) {
		t.Fatalf("second ConnectLoopback: %v", err)
	}
	if err := c.Connect(make([]byte, codec.ConnectTokenBytes), time.Unix(0, 0)); !errors.Is(err, ErrClientLoopback) {
		t.Fatalf("Connect in loopback mode: %v", err)
	}
	for _, p := range []string{"a", "bb"} {
		if err := c.SendPacket([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if want := []sent{{2, "a", 0}, {2, "bb", 1}}; !slices.Equal(got, want) {
		t.Fatalf("loopback sends %v, want %v", got, want)
	}
	if err := c.SendPacket(nil); err == nil {
		t.Fatal("empty loopback payload accepted")
	}
	if err := c.ProcessLoopbackPacket(nil, 1); !errors.Is(err, codec.ErrPayloadSize) {
		t.Fatalf("empty ProcessLoopbackPacket: %v", err)
	}
	if err := c.ProcessLoopbackPacket([]byte("from server"), 77); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1200)
	if n, seq, ok := c.ReceivePacket(buf); !ok || string(buf[:n]) != "from server" || seq != 77 {
		t.Fatalf("ReceivePacket = %q %d %v", buf[:n], seq, ok)
	}
	// No timeouts in loopback mode.
	now := time.Unix(1_700_000_000, 0)
	for range 100 {
		now = now.Add(time.Minute)
		c.Update(now)
	}
	if c.State() != Connected {
		t.Fatalf("loopback client state %v after 100 minutes, want connected", c.State())
	}
	c.DisconnectLoopback()
	if c.IsLoopback() || c.State() != Disconnected || c.ClientIndex() != 0 {
		t.Fatalf("after DisconnectLoopback: loopback %v state %v index %d", c.IsLoopback(), c.State(), c.ClientIndex())
	}
	if want := []ClientState{Connected, Disconnected}; !slices.Equal(changes, want) {
		t.Fatalf("state changes %v, want %v", changes, want)
	}
	if err := c.SendPacket([]byte("a")); !errors.Is(err, ErrClientNotConnected) {
		t.Fatalf("SendPacket after DisconnectLoopback: %v", err)
	}

	// Loopback needs the callback and a disconnected client.
	c2, _ := NewClient(ClientConfig{})
	if err := c2.ConnectLoopback(0, 1); !errors.Is(err, ErrClientConfig) {
		t.Fatalf("ConnectLoopback without callback: %v", err)
	}
	h := newClientHarness(t, ClientConfig{SendLoopbackPacket: func(int, []byte, uint64) {}}, ctSilent)
	h.connect(h.token(5, 60))
	if err := h.client.ConnectLoopback(0, 1); !errors.Is(err, ErrClientBusy) {
		t.Fatalf("ConnectLoopback while connecting: %v", err)
	}
}

func TestClientConfigValidation(t *testing.T) {
	conn := newCTConn("10.0.0.100:50000")
	for _, tc := range []struct {
		name  string
		cfg   ClientConfig
		conns []*batchiotest.Conn
		ok    bool
	}{
		{"zero config", ClientConfig{}, nil, true},
		{"queue 1", ClientConfig{ReceiveQueueSize: 1}, nil, true},
		{"queue 65536", ClientConfig{ReceiveQueueSize: 1 << 16}, nil, true},
		{"queue not a power of two", ClientConfig{ReceiveQueueSize: 3}, nil, false},
		{"negative queue", ClientConfig{ReceiveQueueSize: -1}, nil, false},
		{"queue too large", ClientConfig{ReceiveQueueSize: 1 << 17}, nil, false},
		{"nil conn", ClientConfig{}, []*batchiotest.Conn{conn, nil}, false},
	} {
		var conns []batchio.Conn
		for _, c := range tc.conns {
			if c == nil {
				conns = append(conns, nil)
			} else {
				conns = append(conns, c)
			}
		}
		_, err := NewClient(tc.cfg, conns...)
		if (err == nil) != tc.ok {
			t.Errorf("%s: error %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrClientConfig) {
			t.Errorf("%s: error %v is not ErrClientConfig", tc.name, err)
		}
	}

	h := newClientHarness(t, ClientConfig{}, ctAccept)
	if err := h.client.SendPacket([]byte("x")); !errors.Is(err, ErrClientNotConnected) {
		t.Fatalf("SendPacket while disconnected: %v", err)
	}
	h.connect(h.token(5, 60))
	if err := h.client.SendPacket([]byte("x")); !errors.Is(err, ErrClientNotConnected) {
		t.Fatalf("SendPacket while connecting: %v", err)
	}
	h.runUntil(tick, time.Second, h.inState(Connected))
	for _, n := range []int{0, codec.MaxPayloadBytes + 1} {
		if err := h.client.SendPacket(make([]byte, n)); !errors.Is(err, codec.ErrPayloadSize) {
			t.Fatalf("SendPacket of %d bytes: %v", n, err)
		}
	}
	if err := h.client.SendPacket(make([]byte, codec.MaxPayloadBytes)); err != nil {
		t.Fatalf("SendPacket of 1200 bytes: %v", err)
	}

	// A token whose addresses no conn can reach.
	c6, err := NewClient(ClientConfig{}, newCTConn("[fd00::1]:50000"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c6.Connect(h.token(5, 60), h.now); !errors.Is(err, ErrClientNoRoute) || c6.State() != Disconnected {
		t.Fatalf("Connect with no route: %v, state %v", err, c6.State())
	}
}

func TestClientPicksConnByAddressFamily(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctAccept)
	v6Server := netip.MustParseAddrPort("[fd00::2]:40000")
	v4Server := h.servers[0].addr
	tok, err := GenerateConnectToken(TokenParams{
		ProtocolID: h.protocolID, PrivateKey: h.privateKey, ClientID: 1,
		PublicAddresses: []netip.AddrPort{v6Server, v4Server}, ExpireSeconds: 60, TimeoutSeconds: 5, Now: h.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Only an IPv4 conn: the IPv6 server is skipped like a failed one.
	if err := h.client.Connect(tok, h.now); err != nil {
		t.Fatal(err)
	}
	if h.client.ServerAddress() != v4Server {
		t.Fatalf("server %v, want the IPv4 server %v", h.client.ServerAddress(), v4Server)
	}
	h.client.Disconnect(h.now)

	// IPv4 and IPv6 conns: the IPv6 server is tried first, on the IPv6 conn.
	v4, v6 := newCTConn("10.0.0.100:50000"), newCTConn("[fd00::100]:50000")
	c, err := NewClient(ClientConfig{}, v4, v6)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(tok, h.now); err != nil {
		t.Fatal(err)
	}
	c.Update(h.now)
	sent6, sent4 := v6.Sent(), v4.Sent()
	if len(sent6) == 0 || sent6[0].Addr != v6Server || len(sent4) != 0 {
		t.Fatalf("request not sent to %v on the IPv6 conn (v6 sent %v, v4 sent %d)", v6Server, sent6, len(sent4))
	}
}

func TestClientReceiveQueueFull(t *testing.T) {
	h := newClientHarness(t, ClientConfig{ReceiveQueueSize: 2}, ctAccept)
	h.connected(h.token(5, 60))
	s := h.servers[0]
	for _, p := range []string{"1", "2", "3"} {
		s.sendPayload([]byte(p))
	}
	h.step(tick)
	if got := h.client.Stats().Drops[ClientDropQueueFull]; got != 1 {
		t.Fatalf("%d queue-full drops, want 1", got)
	}
	buf := make([]byte, 1)
	for _, want := range []string{"1", "2"} {
		n, _, ok := h.client.ReceivePacket(buf)
		if !ok || string(buf[:n]) != want {
			t.Fatalf("ReceivePacket = %q %v, want %q", buf[:n], ok, want)
		}
	}
	// A short dst truncates and counts.
	s.sendPayload([]byte("long"))
	h.step(tick)
	if n, _, ok := h.client.ReceivePacket(buf); !ok || n != 1 || h.client.Stats().ReceiveTruncated != 1 {
		t.Fatalf("short dst: n %d ok %v truncated %d", n, ok, h.client.Stats().ReceiveTruncated)
	}
}

// connectedForAllocs returns a client connected to a fake server, with the
// outbound ring drained.
func connectedForAllocs(t *testing.T) (*clientHarness, *ctServer) {
	h := newClientHarness(t, ClientConfig{}, ctAccept)
	h.connected(h.token(-1, 60))
	h.conn.Sent()
	h.conn.Discard = true // what the client sends is counted, not kept
	return h, h.servers[0]
}

func TestClientReceivePayloadAllocs(t *testing.T) {
	h, s := connectedForAllocs(t)
	payload := bytes.Repeat([]byte{7}, 100)
	buf := make([]byte, 1200)
	if n := testing.AllocsPerRun(1000, func() {
		s.sendPayload(payload)
		h.client.Update(h.now)
		h.client.ReceivePacket(buf)
	}); n != 0 {
		t.Fatalf("%v allocations per received payload", n)
	}
	if h.client.Stats().PacketsIn < 1000 || h.client.State() != Connected {
		t.Fatal("payloads not received")
	}
}

func TestClientReceiveKeepAliveAllocs(t *testing.T) {
	h, s := connectedForAllocs(t)
	if n := testing.AllocsPerRun(1000, func() {
		s.sendKeepAlive()
		h.client.Update(h.now)
	}); n != 0 {
		t.Fatalf("%v allocations per received keep-alive", n)
	}
}

func TestClientSendPacketAllocs(t *testing.T) {
	h, _ := connectedForAllocs(t)
	payload := bytes.Repeat([]byte{7}, 1200)
	if n := testing.AllocsPerRun(1000, func() {
		if err := h.client.SendPacket(payload); err != nil {
			t.Fatal(err)
		}
		h.client.Flush()
	}); n != 0 {
		t.Fatalf("%v allocations per SendPacket and flush", n)
	}
	if h.client.Stats().PacketsOut < 1000 {
		t.Fatal("payloads not sent")
	}
}

func TestClientKeepAliveTickAllocs(t *testing.T) {
	h, s := connectedForAllocs(t)
	before := h.conn.Stats().WriteCalls
	if n := testing.AllocsPerRun(1000, func() {
		h.now = h.now.Add(PacketSendInterval)
		h.client.Update(h.now)
	}); n != 0 {
		t.Fatalf("%v allocations per keep-alive tick", n)
	}
	if w := h.conn.Stats().WriteCalls - before; w < 1000 {
		t.Fatalf("%d writes, want a keep-alive per tick", w)
	}
	_ = s
}

func TestClientReceivePacketAllocs(t *testing.T) {
	c, err := NewClient(ClientConfig{SendLoopbackPacket: func(int, []byte, uint64) {}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ConnectLoopback(0, 1); err != nil {
		t.Fatal(err)
	}
	payload, buf := make([]byte, 1200), make([]byte, 1200)
	if n := testing.AllocsPerRun(1000, func() {
		if err := c.ProcessLoopbackPacket(payload, 1); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := c.ReceivePacket(buf); !ok {
			t.Fatal("nothing received")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per queued and received payload", n)
	}
}

func TestClientTokenHistoryBound(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctSilent)
	for i := range clientTokenHistory {
		if err := h.client.Connect(h.token(5, 60), h.now); err != nil {
			t.Fatalf("token %d: %v", i, err)
		}
	}
	// Full of unexpired tokens: a new token takes the record of the one
	// that expires first (tokens carry one session, so the sequence record
	// only matters against servers older than the token rules).
	first := h.client.seqs[0].key
	if err := h.client.Connect(h.token(5, 30), h.now); err != nil {
		t.Fatalf("33rd token: %v", err)
	}
	if err := h.client.Connect(h.token(5, 60), h.now); err != nil || h.client.State() != SendingConnectionRequest {
		t.Fatalf("34th token: %v, state %v", err, h.client.State())
	}
	n := 0
	for _, e := range h.client.seqs {
		if e.key == first {
			t.Fatal("the first token's record survived; it expires no later than the others")
		}
		if e.used {
			n++
		}
	}
	if n != clientTokenHistory {
		t.Fatalf("%d records in use, want %d", n, clientTokenHistory)
	}
}

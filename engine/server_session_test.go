package engine

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/codec"
)

// Connected-slot rules: confirmation, keep-alives, timeouts, disconnects,
// replay protection, several conns.

func TestServerPayloadConfirmsSlot(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	i := a.connect()
	srvExpectTypes(t, "send while unconfirmed", srvSendAndRead(t, h, a, i, "x"),
		codec.ConnectionKeepAlive, codec.ConnectionPayload)
	a.send(a.payload([]byte("hello")))
	srvExpectTypes(t, "send after a payload from the client", srvSendAndRead(t, h, a, i, "x"),
		codec.ConnectionPayload)
	if b, ok := h.receive(i); !ok || string(b) != "hello" {
		t.Fatalf("queued payload %q, %v; want hello", b, ok)
	}
}

func TestServerKeepAliveConfirmsSlot(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	i := a.connect()
	a.send(a.keepAlive())
	srvExpectTypes(t, "send after a keep-alive from the client", srvSendAndRead(t, h, a, i, "x"),
		codec.ConnectionPayload)
}

func TestServerKeepAliveBeforePayloadWhileUnconfirmed(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	i := a.connect()
	for range 3 {
		if err := h.s.SendPacket(i, []byte("p")); err != nil {
			t.Fatal(err)
		}
	}
	h.s.Flush()
	got := a.received()
	srvExpectTypes(t, "three sends while unconfirmed", got,
		codec.ConnectionKeepAlive, codec.ConnectionPayload,
		codec.ConnectionKeepAlive, codec.ConnectionPayload,
		codec.ConnectionKeepAlive, codec.ConnectionPayload)
	for k := 1; k < len(got); k++ {
		if got[k].Sequence != got[k-1].Sequence+1 {
			t.Fatalf("sequences %d then %d; want consecutive", got[k-1].Sequence, got[k].Sequence)
		}
	}
	if got[0].ClientIndex != uint32(i) || got[0].MaxClients != uint32(h.s.MaxClients()) {
		t.Fatalf("keep-alive says index %d of %d; want %d of %d", got[0].ClientIndex, got[0].MaxClients, i, h.s.MaxClients())
	}
}

func srvSendAndRead(t *testing.T, h *srvHarness, p *srvPeer, i int, payload string) []codec.Packet {
	t.Helper()
	if err := h.s.SendPacket(i, []byte(payload)); err != nil {
		t.Fatal(err)
	}
	h.s.Flush()
	return p.received()
}

func TestServerTimesOutClient(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		h := newSrvHarness(t, ServerConfig{})
		a := h.peer("192.0.2.1:5000", 1, nil) // timeout 5 s
		i := a.connect()
		h.step(3 * time.Second)
		a.send(a.keepAlive()) // refreshes the receive time
		h.step(4900 * time.Millisecond)
		if !h.s.slotConnected(i) {
			t.Fatal("timed out 4.9 s after the last keep-alive")
		}
		h.step(100 * time.Millisecond)
		if h.s.slotConnected(i) {
			t.Fatal("still connected 5 s after the last packet")
		}
		if len(h.disconnects) != 1 || h.disconnects[0] != (srvDisconnect{i, DisconnectTimedOut}) {
			t.Fatalf("disconnect events %v; want slot %d timed out", h.disconnects, i)
		}
		if h.s.Stats().Timeouts != 1 {
			t.Fatalf("Timeouts = %d", h.s.Stats().Timeouts)
		}
	})
	t.Run("negative timeout disables", func(t *testing.T) {
		h := newSrvHarness(t, ServerConfig{AllowNoTimeoutTokens: true})
		a := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.TimeoutSeconds = -1 })
		i := a.connect()
		h.step(time.Hour)
		if !h.s.slotConnected(i) {
			t.Fatal("client with a negative timeout timed out")
		}
	})
}

func TestServerDisconnectPacketResetsSlot(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	i := a.connect()
	a.send(a.payload([]byte("queued")))
	a.send(a.disconnect())
	if h.s.slotConnected(i) || h.s.NumConnectedClients() != 0 {
		t.Fatal("slot still connected after a disconnect packet")
	}
	if len(h.disconnects) != 1 || h.disconnects[0] != (srvDisconnect{i, DisconnectClientDisconnected}) {
		t.Fatalf("disconnect events %v", h.disconnects)
	}
	if b, ok := h.receive(i); !ok || string(b) != "queued" {
		t.Fatalf("the session's payload %q, %v: polled before its disconnect", b, ok)
	}
	// The slot and the address are free again, but the token has carried
	// its session: only a fresh one reconnects.
	a.send(a.request())
	a.expectNothing("request with the consumed token")
	h.peer(a.addr.String(), 1, nil).connect()
}

func TestServerSendsRedundantDisconnects(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	b := h.peer("192.0.2.2:5000", 2, nil)
	ia, ib := a.connect(), b.connect()
	check := func(p *srvPeer, what string) {
		t.Helper()
		got := p.received()
		if len(got) != NumDisconnectPackets {
			t.Fatalf("%s: %d packets, want %d disconnects", what, len(got), NumDisconnectPackets)
		}
		for k, pkt := range got {
			if pkt.Type != codec.ConnectionDisconnect || (k > 0 && pkt.Sequence <= got[k-1].Sequence) {
				t.Fatalf("%s: packet %d is %v seq %d", what, k, pkt.Type, pkt.Sequence)
			}
		}
	}
	if err := h.s.DisconnectClient(ia); err != nil {
		t.Fatal(err)
	}
	h.poll()
	h.s.Flush()
	check(a, "DisconnectClient")
	h.stop()
	check(b, "Stop")
	want := []srvDisconnect{{ia, DisconnectServerKicked}, {ib, DisconnectServerStopped}}
	if len(h.disconnects) != 2 || h.disconnects[0] != want[0] || h.disconnects[1] != want[1] {
		t.Fatalf("disconnect events %v, want %v", h.disconnects, want)
	}
	if err := h.s.SendPacket(ib, []byte("x")); err == nil {
		t.Fatal("SendPacket after Stop succeeded")
	}
}

func TestServerDisconnectAll(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	b := h.peer("192.0.2.2:5000", 2, nil)
	a.connect()
	b.connect()
	h.s.DisconnectAll()
	h.poll()
	h.s.Flush()
	if h.s.NumConnectedClients() != 0 {
		t.Fatal("clients left after DisconnectAll")
	}
	for _, p := range []*srvPeer{a, b} {
		if got := p.received(); len(got) != NumDisconnectPackets {
			t.Fatalf("%v got %d packets", p.addr, len(got))
		}
	}
}

func TestServerDropsReplayedPackets(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	i := a.connect()
	pkt := a.payload([]byte("once"))
	a.send(pkt)
	a.send(pkt)
	a.seq = 1000
	a.send(a.payload([]byte("new")))
	a.seq = 1000 - 256 // older than the window
	a.send(a.payload([]byte("old")))
	if got := h.codecDrops(codec.ReasonReplayed); got != 2 {
		t.Fatalf("ReasonReplayed = %d, want 2", got)
	}
	got := advDrain(h, i)
	if len(got) != 2 || got[0] != "once" || got[1] != "new" {
		t.Fatalf("queued %q, want [once new]", got)
	}
}

func TestServerKeepAlivesAt10Hz(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{AllowNoTimeoutTokens: true})
	a := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.TimeoutSeconds = -1 })
	i := a.connect() // sends a keep-alive now
	a.send(a.keepAlive())
	count := func(d time.Duration, send bool) (keepAlives, payloads int) {
		for step := time.Duration(0); step < d; step += 10 * time.Millisecond {
			if send && step%(50*time.Millisecond) == 0 {
				if err := h.s.SendPacket(i, []byte("tick")); err != nil {
					t.Fatal(err)
				}
			}
			h.step(10 * time.Millisecond)
		}
		for _, p := range a.received() {
			switch p.Type {
			case codec.ConnectionKeepAlive:
				keepAlives++
			case codec.ConnectionPayload:
				payloads++
			}
		}
		return
	}
	if k, _ := count(time.Second, false); k != 10 {
		t.Fatalf("%d keep-alives in an idle second, want 10", k)
	}
	if k, p := count(time.Second, true); k != 0 || p != 20 {
		t.Fatalf("%d keep-alives, %d payloads while sending at 20 Hz; want 0, 20", k, p)
	}
}

func TestServerIPv4AndIPv6(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{}, srvAddr, srvAddr6)
	both := func(tp *TokenParams) { tp.PublicAddresses = []netip.AddrPort{srvAddr, srvAddr6} }
	v4 := h.peer("192.0.2.1:5000", 1, both)
	v6 := h.peer("[2001:db8::99]:5000", 2, both)
	v6.sock = 1
	i4, i6 := v4.connect(), v6.connect()
	for _, i := range []int{i4, i6} {
		if err := h.s.SendPacket(i, []byte("hi")); err != nil {
			t.Fatal(err)
		}
	}
	h.s.Flush()
	srvExpectTypes(t, "v4", v4.received(), codec.ConnectionKeepAlive, codec.ConnectionPayload)
	srvExpectTypes(t, "v6", v6.received(), codec.ConnectionKeepAlive, codec.ConnectionPayload)
	for sock, c := range h.conns {
		if out := c.Sent(); len(out) != 0 {
			t.Fatalf("conn %d sent %d datagrams to the wrong family: %v", sock, len(out), out[0].Addr)
		}
	}
	if h.s.slotAddr(i6) != v6.addr {
		t.Fatalf("ClientAddress = %v", h.s.slotAddr(i6))
	}
}

func TestServerAppAPIErrors(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, func(tp *TokenParams) { tp.UserData = []byte("profile") })
	i := a.connect()
	for _, c := range []struct {
		name    string
		index   int
		payload []byte
		want    error
	}{
		{"negative index", -1, []byte("x"), ErrSlotIndex},
		{"index too large", h.s.MaxClients(), []byte("x"), ErrSlotIndex},
		{"empty slot", i + 1, []byte("x"), ErrSlotNotConnected},
		{"empty payload", i, nil, codec.ErrPayloadSize},
		{"payload too large", i, make([]byte, codec.MaxPayloadBytes+1), codec.ErrPayloadSize},
	} {
		if err := h.s.SendPacket(c.index, c.payload); !errors.Is(err, c.want) {
			t.Errorf("%s: SendPacket error %v, want %v", c.name, err, c.want)
		}
	}
	if err := h.s.SendPacket(i, make([]byte, codec.MaxPayloadBytes)); err != nil {
		t.Errorf("1200-byte payload: %v", err)
	}
	if h.s.slotID(i) != 1 || h.s.slotID(i+1) != 0 {
		t.Errorf("ClientID = %d, %d", h.s.slotID(i), h.s.slotID(i+1))
	}
	ud := h.s.slotUserData(i)
	if !bytes.HasPrefix(ud[:], []byte("profile")) {
		t.Errorf("user data %q", ud[:8])
	}
	if err := h.s.DisconnectClient(i + 1); !errors.Is(err, ErrSlotNotConnected) {
		t.Errorf("DisconnectClient on an empty slot: %v", err)
	}
}

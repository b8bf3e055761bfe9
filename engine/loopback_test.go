package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

type srvLoopbackSend struct {
	index   int
	payload string
	seq     uint64
}

func TestServerLoopbackClient(t *testing.T) {
	var sent []srvLoopbackSend
	h := newSrvHarness(t, ServerConfig{SendLoopbackPacket: func(i int, p []byte, seq uint64) {
		sent = append(sent, srvLoopbackSend{i, string(p), seq})
	}})
	const idx = 2
	if err := h.s.ConnectLoopbackClient(idx, 99, []byte("local")); err != nil {
		t.Fatal(err)
	}
	h.poll()
	if !h.s.slotConnected(idx) || !h.s.slots[idx].loopback || h.s.slotID(idx) != 99 || h.s.NumConnectedClients() != 1 {
		t.Fatal("loopback client not connected in slot 2")
	}
	if len(h.connects) != 1 || h.connects[0] != idx {
		t.Fatalf("OnConnect events %v", h.connects)
	}
	if err := h.s.ConnectLoopbackClient(idx, 100, nil); !errors.Is(err, ErrSlotInUse) {
		t.Fatalf("second loopback client in the same slot: %v", err)
	}
	if err := h.s.ConnectLoopbackClient(0, 99, nil); !errors.Is(err, ErrClientIDInUse) {
		t.Fatalf("duplicate client id: %v", err)
	}

	// Sends go to the callback with the slot's sequence.
	for _, s := range []string{"a", "b"} {
		if err := h.s.SendPacket(idx, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if len(sent) != 2 || sent[0] != (srvLoopbackSend{idx, "a", 0}) || sent[1] != (srvLoopbackSend{idx, "b", 1}) {
		t.Fatalf("loopback sends %v", sent)
	}
	// Payloads from the client are queued.
	if err := h.s.ProcessLoopbackPacket(idx, []byte("from client"), 7); err != nil {
		t.Fatal(err)
	}
	var got []Event
	h.s.Poll(func(ev *Event) { e := *ev; e.Payload = append([]byte(nil), ev.Payload...); got = append(got, e) })
	if len(got) != 1 || got[0].Kind != EventPayload || got[0].ClientIndex != idx || got[0].ClientID != 99 ||
		got[0].Sequence != 7 || string(got[0].Payload) != "from client" {
		t.Fatalf("polled %+v", got)
	}
	if err := h.s.ProcessLoopbackPacket(0, []byte("x"), 0); !errors.Is(err, ErrSlotNotConnected) {
		t.Fatalf("ProcessLoopbackPacket on an empty slot: %v", err)
	}

	// A network client with the same id is refused.
	p := h.peer("192.0.2.1:5000", 99, nil)
	p.send(p.request())
	p.expectNothing("request for the loopback client's id")
	if got := h.drops(ServerDropClientIDConnected); got != 1 {
		t.Fatalf("ServerDropClientIDConnected = %d", got)
	}

	// No timeouts, keep-alives or disconnect packets.
	h.step(time.Hour)
	h.s.DisconnectAll()
	h.poll()
	if !h.s.slotConnected(idx) {
		t.Fatal("loopback client timed out or was disconnected by DisconnectAll")
	}
	if err := h.s.DisconnectClient(idx); !errors.Is(err, ErrSlotIsLoopback) {
		t.Fatalf("DisconnectClient on a loopback slot: %v", err)
	}
	if err := h.s.DisconnectLoopbackClient(idx); err != nil {
		t.Fatal(err)
	}
	h.poll()
	if h.s.slotConnected(idx) || len(h.disconnects) != 1 || h.disconnects[0] != (srvDisconnect{idx, DisconnectLoopbackClosed}) {
		t.Fatalf("after DisconnectLoopbackClient: connected %v, events %v", h.s.slotConnected(idx), h.disconnects)
	}
	h.s.Flush()
	if n := len(h.conns[0].Sent()); n != 0 {
		t.Fatalf("server sent %d datagrams for a loopback client", n)
	}
	// The slot is free for network clients again: all four slots fill.
	for k := range h.s.MaxClients() {
		h.peer(fmt.Sprintf("192.0.2.%d:5000", 10+k), uint64(1000+k), nil).connect()
	}
	if !h.s.slotConnected(idx) || h.s.slots[idx].loopback {
		t.Fatal("former loopback slot not reused by a network client")
	}
}

func TestServerLoopbackNeedsSender(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	if err := h.s.ConnectLoopbackClient(0, 1, nil); !errors.Is(err, ErrNoLoopbackSender) {
		t.Fatalf("ConnectLoopbackClient without SendLoopbackPacket: %v", err)
	}
}

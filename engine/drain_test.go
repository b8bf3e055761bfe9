package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/netcode-go/netcode/codec"
)

// TestDrainAnswersLikeFull: a draining server answers new requests, and
// responses, as a full one does, keeps its clients, and is not Ready.
func TestDrainAnswersLikeFull(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	ia := a.connect()
	mid := h.peer("192.0.2.2:5000", 2, nil)
	mid.challenged() // a handshake under way when the drain begins
	if !h.s.Ready() || h.s.Draining() {
		t.Fatal("a running server not ready, or draining")
	}
	h.s.Drain()
	if h.s.Ready() || !h.s.Draining() {
		t.Fatal("a draining server ready")
	}
	late := h.peer("192.0.2.3:5000", 3, nil)
	srvExpectTypes(t, "request while draining", late.send(late.request()), codec.ConnectionDenied)
	srvExpectTypes(t, "response while draining", mid.send(mid.response()), codec.ConnectionDenied)
	a.send(a.payload([]byte("still playing")))
	if b, ok := h.receive(ia); !ok || string(b) != "still playing" || !h.s.slotConnected(ia) {
		t.Fatal("a connected client stopped playing when the drain began")
	}
	if err := h.s.Shutdown(context.Background()); !errors.Is(err, ErrManualOnly) {
		t.Fatalf("Shutdown in manual mode: %v", err)
	}
}

// TestLive: a manual server is live while its application calls Update,
// and not once it stops doing so for longer than the bound, or is
// stopped.
func TestLive(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	h.update()
	if !h.s.Live(time.Minute) {
		t.Fatal("a server updated just now is not live")
	}
	// Live measures stalls in real time: age the last pass by a second.
	h.s.shard0().lastPass.Add(-int64(time.Second))
	if h.s.Live(500 * time.Millisecond) {
		t.Fatal("a server not updated for a second is live within 500 ms")
	}
	h.update()
	h.stop()
	if h.s.Live(time.Minute) || h.s.Ready() {
		t.Fatal("a stopped server is live or ready")
	}
}

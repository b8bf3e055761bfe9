package dedicated

import (
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
)

type ackRecorder struct {
	payloads int
	acks     []uint16
}

func (g *ackRecorder) Connect(*engine.Server, *engine.Event)    {}
func (g *ackRecorder) Disconnect(*engine.Server, *engine.Event) {}
func (g *ackRecorder) Payload(*engine.Server, *engine.Event)    { g.payloads++ }
func (g *ackRecorder) Tick(*engine.Server, time.Time)           {}
func (g *ackRecorder) Acks(_ *engine.Server, ev *engine.Event) {
	g.acks = append(g.acks, ev.Acks...)
}

// TestAckGameGetsAcks: the loop hands acks events to a game that takes
// them, and to no other.
func TestAckGameGetsAcks(t *testing.T) {
	g := &ackRecorder{}
	l := newLoop(nil, g, 60, nil, nil, nil)
	l.dispatch(&engine.Event{Kind: engine.EventAcks, Acks: []uint16{3, 4}})
	l.dispatch(&engine.Event{Kind: engine.EventPayload})
	if len(g.acks) != 2 || g.acks[0] != 3 || g.acks[1] != 4 || g.payloads != 1 {
		t.Fatalf("game saw acks %v and %d payloads; want [3 4] and 1", g.acks, g.payloads)
	}
	plain := newLoop(nil, Echo(), 60, nil, nil, nil)
	plain.dispatch(&engine.Event{Kind: engine.EventAcks, Acks: []uint16{1}}) // ignored
}

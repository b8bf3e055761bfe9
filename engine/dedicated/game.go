package dedicated

import (
	"time"

	"github.com/netcode-go/netcode/engine"
)

// Game is a game's logic. Its methods run on one goroutine (Run's
// application goroutine) and must not block: ev is valid only during the
// call, and its Payload and UserData must be copied if kept.
type Game interface {
	// Connect: a client took a slot.
	Connect(srv *engine.Server, ev *engine.Event)
	// Disconnect: a client left its slot (ev.Reason says why).
	Disconnect(srv *engine.Server, ev *engine.Event)
	// Payload: a client sent ev.Payload.
	Payload(srv *engine.Server, ev *engine.Event)
	// Tick runs at Config.TickRate; it may do nothing.
	Tick(srv *engine.Server, now time.Time)
}

// AckGame is a Game that also takes acks: with reliable endpoints on
// (Config.Server.Reliable), the packets in ev.Acks reached the client in
// slot ev.ClientIndex. A game running message channels over them hands
// these to message/engineconn's Server.Handle, as it does its other
// events. A Game that is not an AckGame never sees acks.
type AckGame interface {
	Game
	Acks(srv *engine.Server, ev *engine.Event)
}

// Echo returns the echo game: each payload goes back to its sender. It is
// what load tests (netbench -target) measure.
func Echo() Game { return echo{} }

type echo struct{}

func (echo) Connect(*engine.Server, *engine.Event)    {}
func (echo) Disconnect(*engine.Server, *engine.Event) {}
func (echo) Tick(*engine.Server, time.Time)           {}

// Payload sends the payload back; a full send queue drops it (the server
// counts it in SendQueueFull).
func (echo) Payload(srv *engine.Server, ev *engine.Event) {
	_ = srv.SendPacket(ev.ClientIndex, ev.Payload)
}

// Relay returns the relay game: each client's payloads are forwarded to
// every other connected client. Each call returns a new game.
func Relay() Game { return &relay{} }

type relay struct{ clients clientSet }

func (r *relay) Connect(srv *engine.Server, ev *engine.Event) {
	r.clients.add(srv.MaxClients(), ev.ClientIndex, ev.ClientID)
}

func (r *relay) Disconnect(_ *engine.Server, ev *engine.Event) { r.clients.remove(ev.ClientIndex) }

func (r *relay) Tick(*engine.Server, time.Time) {}

func (r *relay) Payload(srv *engine.Server, ev *engine.Event) {
	for _, i := range r.clients.slots {
		if int(i) != ev.ClientIndex {
			_ = srv.SendPacket(int(i), ev.Payload)
		}
	}
}

// clientSet is the set of connected clients by slot: add, remove and
// iteration in O(1) per client, without allocating once sized.
type clientSet struct {
	slots []int32  // the occupied slots, in no order
	ids   []uint64 // ids[k] is the client id in slots[k]
	pos   []int32  // pos[slot] is its index in slots plus one; 0: free
}

func (s *clientSet) add(maxClients, slot int, id uint64) {
	if s.pos == nil {
		s.pos = make([]int32, maxClients)
		s.slots = make([]int32, 0, maxClients)
		s.ids = make([]uint64, 0, maxClients)
	}
	if slot < 0 || slot >= len(s.pos) || s.pos[slot] != 0 {
		return
	}
	s.slots = append(s.slots, int32(slot))
	s.ids = append(s.ids, id)
	s.pos[slot] = int32(len(s.slots))
}

func (s *clientSet) remove(slot int) {
	if slot < 0 || slot >= len(s.pos) || s.pos[slot] == 0 {
		return
	}
	k, last := s.pos[slot]-1, len(s.slots)-1
	s.slots[k], s.ids[k] = s.slots[last], s.ids[last]
	s.pos[s.slots[k]] = k + 1
	s.slots, s.ids = s.slots[:last], s.ids[:last]
	s.pos[slot] = 0
}

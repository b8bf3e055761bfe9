package engine

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/ring"
)

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	// EventConnect: a client took slot ClientIndex.
	EventConnect EventKind = iota + 1
	// EventDisconnect: the client in slot ClientIndex left (Reason). Its
	// slot and client id are free again once the event has been polled.
	EventDisconnect
	// EventPayload: the client in slot ClientIndex sent Payload.
	EventPayload
	// EventAcks: the client in slot ClientIndex acknowledged the packets
	// in Acks (reliable endpoints only).
	EventAcks
)

var eventKindText = [...]string{EventConnect: "connect", EventDisconnect: "disconnect", EventPayload: "payload", EventAcks: "acks"}

func (k EventKind) String() string {
	if int(k) < len(eventKindText) && eventKindText[k] != "" {
		return eventKindText[k]
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// DisconnectReason says why a client left its slot.
type DisconnectReason uint8

// Disconnect reasons, as the reference records them per slot, and two of
// this server's own.
const (
	// DisconnectTimedOut: nothing was received from the client within the
	// token's timeout.
	DisconnectTimedOut DisconnectReason = iota + 1
	// DisconnectClientDisconnected: the client sent a disconnect packet.
	DisconnectClientDisconnected
	// DisconnectServerKicked: the application called DisconnectClient or
	// DisconnectAll.
	DisconnectServerKicked
	// DisconnectServerStopped: the server was stopped or closed.
	DisconnectServerStopped
	// DisconnectLoopbackClosed: the application called
	// DisconnectLoopbackClient.
	DisconnectLoopbackClosed
)

var disconnectReasonText = [...]string{
	DisconnectTimedOut:           "timed out",
	DisconnectClientDisconnected: "client disconnected",
	DisconnectServerKicked:       "disconnected by server",
	DisconnectServerStopped:      "server stopped",
	DisconnectLoopbackClosed:     "loopback client disconnected",
}

func (r DisconnectReason) String() string {
	if int(r) < len(disconnectReasonText) && disconnectReasonText[r] != "" {
		return disconnectReasonText[r]
	}
	return fmt.Sprintf("DisconnectReason(%d)", uint8(r))
}

// Event is one thing the server reports to the application through Poll.
// An event carries what a handler needs about its client, so nothing must
// be looked up afterwards. The event, its UserData and its Payload are
// valid only during the Poll callback.
type Event struct {
	Kind        EventKind
	ClientIndex int
	ClientID    uint64
	// Address is the client's address (connect and disconnect events;
	// the zero value for loopback clients).
	Address netip.AddrPort
	// UserData is the 256 bytes of user data from the client's connect
	// token (connect and disconnect events).
	UserData *[codec.UserDataBytes]byte
	// Loopback is set for a loopback client (ConnectLoopbackClient).
	Loopback bool
	// Reason says why the client left (disconnect events).
	Reason DisconnectReason
	// Sequence and Payload are a payload event's packet sequence and data.
	// With reliable endpoints on, Sequence is the packet's reliable
	// sequence and Payload may be up to reliable.Config.MaxPacketSize.
	Sequence uint64
	Payload  []byte
	// Acks are the sequences of packets sent to the client that it has
	// acknowledged since the last acks event (EventAcks).
	Acks []uint16
}

// inboxEntry is a received payload (or acks) waiting for Poll. A payload
// longer than one entry's data continues in the entries after it: a record
// of chunks(n) entries, published whole.
type inboxEntry struct {
	order  uint64 // the shard's hand-off count: Poll merges the rings by it
	client int32
	n      int32 // payload bytes (the whole record's); acks: their count
	acks   bool
	seq    uint64
	data   [codec.MaxPayloadBytes]byte
}

func inboxData(e *inboxEntry) []byte   { return e.data[:] }
func outboxData(e *outboxEntry) []byte { return e.data[:] }

// chunks is the number of ring entries a record of n bytes takes.
func chunks(n int) int {
	return max(1, (n+codec.MaxPayloadBytes-1)/codec.MaxPayloadBytes)
}

// eventEntry is a connect or disconnect waiting for Poll. The client's id,
// address and user data stay in its slot until the disconnect has been
// polled (two-phase release), so an entry is small and the ring can have
// room for every slot.
type eventEntry struct {
	order  uint64
	kind   EventKind
	reason DisconnectReason
	client int32
}

type outboxKind uint8

const (
	outSend outboxKind = iota + 1
	outBroadcast
	outDisconnect
	outDisconnectAll
)

// outboxEntry is the application's work for a shard (default mode). A
// send longer than one entry's data continues in the entries after it, as
// in the inbox.
type outboxEntry struct {
	kind   outboxKind
	client int32
	gen    uint32
	n      int32
	data   [codec.MaxPayloadBytes]byte
}

// eventRingSize holds a connect and a disconnect event for every slot.
func eventRingSize(maxClients int) int {
	n := 16
	for n < 2*maxClients+16 {
		n <<= 1
	}
	return n
}

// canAdmit reports whether the event ring has room for a new client's
// connect and its later disconnect, beyond what is kept for the clients
// the shard already has (producer side).
func (s *shard) canAdmit() bool {
	return s.events.Cap()-s.events.Len() >= s.reserved+2
}

// deliver hands a payload from slot i to the application; false means the
// inbox is full.
func (s *shard) deliver(i int32, payload []byte, seq uint64) bool {
	k := chunks(len(payload))
	if _, ok := s.inbox.ReserveAt(k - 1); !ok {
		return false
	}
	for c := range k {
		e, _ := s.inbox.ReserveAt(c)
		copy(e.data[:], payload[c*codec.MaxPayloadBytes:])
	}
	e, _ := s.inbox.ReserveAt(0)
	s.order++
	e.order, e.client, e.seq, e.acks = s.order, i, seq, false
	e.n = int32(len(payload))
	s.inbox.CommitN(k)
	s.pushed = true
	return true
}

// deliverAcks hands the application the acks slot i's endpoint reported;
// false means the inbox is full.
func (s *shard) deliverAcks(i int32, acks []uint16) bool {
	acks = acks[:min(len(acks), codec.MaxPayloadBytes/2)] // AckBufferSize is smaller
	e, ok := s.inbox.Reserve()
	if !ok {
		return false
	}
	for k, a := range acks {
		binary.LittleEndian.PutUint16(e.data[2*k:], a)
	}
	s.order++
	e.order, e.client, e.seq, e.acks = s.order, i, 0, true
	e.n = int32(len(acks))
	s.inbox.Commit()
	s.pushed = true
	return true
}

// readRecord returns the payload of the record whose first entry is e,
// gathered into buf when it spans several entries, and the number of
// entries to release. Consumer side.
func readRecord[T any](r *ring.SPSC[T], first []byte, n int, buf []byte, data func(*T) []byte) ([]byte, int) {
	k := chunks(n)
	if k == 1 {
		return first[:n], 1
	}
	off := copy(buf, first)
	for c := 1; c < k; c++ {
		e, ok := r.FrontAt(c)
		if !ok { // cannot happen: records are published whole
			return nil, c
		}
		off += copy(buf[off:n], data(e))
	}
	return buf[:n], k
}

// pushEvent queues a connect or disconnect event; canAdmit kept room.
func (s *shard) pushEvent(kind EventKind, i int, reason DisconnectReason) {
	e, ok := s.events.Reserve()
	if !ok {
		return // cannot happen: room is reserved
	}
	s.order++
	e.order, e.kind, e.client, e.reason = s.order, kind, int32(i), reason
	s.events.Commit()
	s.pushed = true
}

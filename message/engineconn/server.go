package engineconn

import (
	"errors"
	"fmt"
	"time"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/message"
	"github.com/netcode-go/netcode/reliable"
)

// MaxPacketBudget is the largest message.Config.PacketBudget that fits in
// one netcode payload with the reliable header. A budget above the
// reliable FragmentAbove (1,024 by default) still works, as fragments.
const MaxPacketBudget = codec.MaxPayloadBytes - reliable.MaxHeaderBytes

// Server keeps a message.Conn for every connected client of an engine
// server. Application goroutine only, like the server's Poll.
type Server struct {
	srv       *engine.Server
	cfg       message.Config
	conns     []*message.Conn // by slot; made at a slot's first connect, then reused
	connected []bool
	epoch     time.Time
	buf       [codec.MaxPayloadBytes]byte
	// Errors counts packets refused by ReadPacket (malformed: a peer
	// with another config) and sends the engine refused.
	readErrors, sendErrors uint64
}

func checkConfig(cfg message.Config) (message.Config, error) {
	c, err := message.New(cfg) // normalizes and validates
	if err != nil {
		return cfg, err
	}
	cfg = c.Config()
	if cfg.PacketBudget > MaxPacketBudget {
		return cfg, fmt.Errorf("engineconn: PacketBudget %d; want at most %d (a netcode payload less the reliable header)", cfg.PacketBudget, MaxPacketBudget)
	}
	return cfg, nil
}

// NewServer returns channels for srv's clients, configured by cfg. srv
// must have reliable endpoints (ServerConfig.Reliable). A Conn is made the
// first time its slot connects (message.Conn memory follows the config:
// queues of MaxMessageSize slots and block buffers) and reused after.
func NewServer(srv *engine.Server, cfg message.Config, now time.Time) (*Server, error) {
	if !srv.ReliableEnabled() {
		return nil, fmt.Errorf("engineconn: %w", engine.ErrReliableOff)
	}
	cfg, err := checkConfig(cfg)
	if err != nil {
		return nil, err
	}
	n := srv.MaxClients()
	return &Server{srv: srv, cfg: cfg, conns: make([]*message.Conn, n), connected: make([]bool, n), epoch: now}, nil
}

// Conn returns the channels of the client in slot i, or nil when none is
// connected there.
func (s *Server) Conn(i int) *message.Conn {
	if i < 0 || i >= len(s.conns) || !s.connected[i] {
		return nil
	}
	return s.conns[i]
}

// Handle takes a polled event: connects and disconnects start and end a
// slot's Conn, payloads are read into it, acks settle what it sent. The
// game handles the event too as it likes (its payloads are message
// packets: leave them to Handle).
func (s *Server) Handle(ev *engine.Event) {
	i := ev.ClientIndex
	if i < 0 || i >= len(s.conns) {
		return
	}
	switch ev.Kind {
	case engine.EventConnect:
		if s.conns[i] == nil {
			c, err := message.New(s.cfg)
			if err != nil { // cannot happen: NewServer checked it
				s.sendErrors++
				return
			}
			s.conns[i] = c
		}
		s.conns[i].Reset()
		s.connected[i] = true
	case engine.EventDisconnect:
		s.connected[i] = false
	case engine.EventPayload:
		if !s.connected[i] {
			return
		}
		err := s.conns[i].ReadPacket(uint16(ev.Sequence), ev.Payload)
		if err != nil && !errors.Is(err, message.ErrDuplicate) {
			s.readErrors++
		}
	case engine.EventAcks:
		if !s.connected[i] {
			return
		}
		for _, a := range ev.Acks {
			s.conns[i].Ack(a)
		}
	}
}

// Flush writes one packet to every connected client: what its channels
// have due, or an empty packet carrying acks, and flushes the server's
// sends. It refreshes each Conn's RTT from the endpoint's estimate first.
func (s *Server) Flush(now time.Time) {
	t := now.Sub(s.epoch)
	for i, on := range s.connected {
		if !on {
			continue
		}
		c := s.conns[i]
		if st, err := s.srv.ReliableStats(i); err == nil {
			c.SetRTT(time.Duration(st.RTT * float32(time.Millisecond)))
		}
		seq, err := s.srv.NextSequence(i)
		if err != nil {
			s.sendErrors++
			continue
		}
		n := c.WritePacket(s.buf[:], seq, t)
		if err := s.srv.SendPacket(i, s.buf[:n]); err != nil {
			s.sendErrors++
		}
	}
	s.srv.Flush() // the packets leave now, not at the next Update
}

// Stalled appends to dst the slots whose client has acked nothing for the
// config's StallTimeout while packets went to it (see message.Conn.Stalled):
// candidates for DisconnectClient.
func (s *Server) Stalled(dst []int) []int {
	for i, on := range s.connected {
		if on && s.conns[i].Stalled() {
			dst = append(dst, i)
		}
	}
	return dst
}

// Errors returns the packets refused as malformed and the sends that
// failed.
func (s *Server) Errors() (read, send uint64) { return s.readErrors, s.sendErrors }

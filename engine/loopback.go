package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/netcode-go/netcode/codec"
)

// Loopback clients live in the same process as the server (for example a
// listen server's local player), like the reference's
// netcode_server_connect_loopback_client. They occupy a slot and count as
// connected, but no packets are exchanged: SendPacket and Broadcast hand
// payloads to ServerConfig.SendLoopbackPacket and the application hands the
// client's payloads in with ProcessLoopbackPacket. They never time out and
// get no keep-alives or disconnect packets. Manual mode only; they belong
// to the first shard.

var errLoopbackManual = errors.New("netcode: loopback clients need the manual mode (ServerConfig.Manual)")

// ConnectLoopbackClient puts a loopback client with clientID and up to 256
// bytes of userData into the free slot clientIndex. Its connect event comes
// through Poll like any other.
func (s *Server) ConnectLoopbackClient(clientIndex int, clientID uint64, userData []byte) error {
	switch {
	case !s.cfg.Manual:
		return errLoopbackManual
	case s.stopped.Load():
		return ErrServerStopped
	case s.cfg.SendLoopbackPacket == nil:
		return ErrNoLoopbackSender
	case clientIndex < 0 || clientIndex >= len(s.slots):
		return fmt.Errorf("%w: %d; want 0 to %d", ErrSlotIndex, clientIndex, len(s.slots)-1)
	case len(userData) > codec.UserDataBytes:
		return fmt.Errorf("%w, got %d", ErrUserDataSize, len(userData))
	}
	sh := s.shards[0]
	if !sh.canAdmit() {
		return ErrEventQueueFull
	}
	if err := s.adm.claimIndex(clientIndex, clientID); err != nil {
		return err
	}
	var ud [codec.UserDataBytes]byte
	copy(ud[:], userData)
	sl := &s.slots[clientIndex]
	sl.loopback = true
	sl.confirmed = true
	sl.sequence = 0
	sl.addr = netip.AddrPort{}
	sh.occupy(clientIndex, clientID, &ud)
	s.log.Info("netcode loopback client connected", slog.Int("client_index", clientIndex), slog.String("client_id", IDString(clientID)))
	return nil
}

// DisconnectLoopbackClient ends the loopback client's session; its
// disconnect event (DisconnectLoopbackClosed) comes through Poll.
func (s *Server) DisconnectLoopbackClient(clientIndex int) error {
	if _, err := s.loopbackSlot(clientIndex); err != nil {
		return err
	}
	s.shards[0].resetSlot(clientIndex, DisconnectLoopbackClosed)
	return nil
}

// ProcessLoopbackPacket hands the server a payload the loopback client
// sent, as if it had arrived in a payload packet with sequence: it comes
// out of Poll as a payload event. It fails for a slot without a loopback
// client, a payload outside 1..1200 bytes, or a full event queue (the drop
// is counted too).
func (s *Server) ProcessLoopbackPacket(clientIndex int, payload []byte, sequence uint64) error {
	if _, err := s.loopbackSlot(clientIndex); err != nil {
		return err
	}
	if len(payload) < 1 || len(payload) > codec.MaxPayloadBytes {
		return fmt.Errorf("%w, got %d", codec.ErrPayloadSize, len(payload))
	}
	sh := s.shards[0]
	if !sh.deliver(int32(clientIndex), payload, sequence) {
		sh.stats.Drops[ServerDropAppBacklog]++
		return ErrEventQueueFull
	}
	return nil
}

func (s *Server) loopbackSlot(clientIndex int) (*slot, error) {
	if !s.cfg.Manual {
		return nil, errLoopbackManual
	}
	if clientIndex < 0 || clientIndex >= len(s.slots) {
		return nil, fmt.Errorf("%w: %d; want 0 to %d", ErrSlotIndex, clientIndex, len(s.slots)-1)
	}
	sl := &s.slots[clientIndex]
	if !sl.connected {
		return nil, fmt.Errorf("%w: %d", ErrSlotNotConnected, clientIndex)
	}
	if !sl.loopback {
		return nil, fmt.Errorf("%w: %d", ErrSlotNotLoopback, clientIndex)
	}
	return sl, nil
}

package engine

import (
	"fmt"
	"log/slog"

	"github.com/netcode-go/netcode/codec"
)

// Loopback clients live in the same process as the server (for example a
// listen server's local player), like the reference's
// netcode_server_connect_loopback_client. They occupy a slot and count as
// connected, but no packets are exchanged: SendPacket hands payloads to
// ServerConfig.SendLoopbackPacket and the application queues the client's
// payloads with ProcessLoopbackPacket. They never time out and get no
// keep-alives or disconnect packets.

// ConnectLoopbackClient puts a loopback client with clientID and up to 256
// bytes of userData into the free slot clientIndex.
func (s *Server) ConnectLoopbackClient(clientIndex int, clientID uint64, userData []byte) error {
	if s.stopped {
		return ErrServerStopped
	}
	if s.cfg.SendLoopbackPacket == nil {
		return ErrNoLoopbackSender
	}
	if clientIndex < 0 || clientIndex >= len(s.slots) {
		return fmt.Errorf("%w: %d; want 0 to %d", ErrSlotIndex, clientIndex, len(s.slots)-1)
	}
	if s.slots[clientIndex].connected {
		return fmt.Errorf("%w: %d", ErrSlotInUse, clientIndex)
	}
	if len(userData) > codec.UserDataBytes {
		return fmt.Errorf("%w, got %d", ErrUserDataSize, len(userData))
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
	s.occupy(clientIndex, clientID, &ud)
	s.log.Info("netcode loopback client connected", slog.Int("client_index", clientIndex), slog.Uint64("client_id", clientID))
	if s.cfg.OnConnect != nil {
		s.cfg.OnConnect(clientIndex, clientID)
	}
	return nil
}

// DisconnectLoopbackClient resets the loopback client's slot
// (OnDisconnect with DisconnectLoopbackClosed).
func (s *Server) DisconnectLoopbackClient(clientIndex int) error {
	if _, err := s.loopbackSlot(clientIndex); err != nil {
		return err
	}
	s.resetSlot(clientIndex, DisconnectLoopbackClosed)
	return nil
}

// IsLoopbackClient reports whether slot clientIndex holds a loopback client.
func (s *Server) IsLoopbackClient(clientIndex int) bool {
	return s.ClientConnected(clientIndex) && s.slots[clientIndex].loopback
}

// ProcessLoopbackPacket queues a payload the loopback client sent, as if it
// had arrived in a payload packet with sequence. It fails for a slot without
// a loopback client, a payload outside 1..1200 bytes, or a full queue or
// buffer pool (the drop is counted too).
func (s *Server) ProcessLoopbackPacket(clientIndex int, payload []byte, sequence uint64) error {
	sl, err := s.loopbackSlot(clientIndex)
	if err != nil {
		return err
	}
	if len(payload) < 1 || len(payload) > codec.MaxPayloadBytes {
		return fmt.Errorf("%w, got %d", codec.ErrPayloadSize, len(payload))
	}
	if !s.enqueue(sl, payload, sequence) {
		return ErrReceiveQueueFull
	}
	return nil
}

func (s *Server) loopbackSlot(clientIndex int) (*slot, error) {
	sl, err := s.checkSlot(clientIndex)
	if err != nil {
		return nil, err
	}
	if !sl.loopback {
		return nil, fmt.Errorf("%w: %d", ErrSlotNotLoopback, clientIndex)
	}
	return sl, nil
}

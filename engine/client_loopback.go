package engine

import (
	"fmt"
	"net/netip"

	"github.com/netcode-go/netcode/codec"
)

// Loopback mode connects a client to a server in the same process without
// packets, encryption or timeouts, like the reference's
// netcode_client_connect_loopback: a server hosting a local player. Payloads
// the app sends go to ClientConfig.SendLoopbackPacket; payloads from the
// server are handed in with ProcessLoopbackPacket. Update does nothing while
// the client is in loopback mode.

// ConnectLoopback puts a disconnected client straight into Connected as
// client clientIndex of a server with maxClients slots.
func (c *Client) ConnectLoopback(clientIndex, maxClients int) error {
	if c.cfg.SendLoopbackPacket == nil {
		return fmt.Errorf("%w: ConnectLoopback needs ClientConfig.SendLoopbackPacket", ErrClientConfig)
	}
	if c.loopback {
		return ErrClientLoopback
	}
	if c.state > Disconnected {
		return fmt.Errorf("%w (state: %v)", ErrClientBusy, c.state)
	}
	if maxClients < 1 || clientIndex < 0 || clientIndex >= maxClients {
		return fmt.Errorf("netcode: loopback client index %d with max clients %d; want max clients >= 1 and 0 <= index < max clients",
			clientIndex, maxClients)
	}
	c.queue.clear()
	c.sequence = 0 // no key, so no nonce to protect
	c.seqSlot = -1
	c.serverAddr = netip.AddrPort{}
	c.loopback = true
	c.clientIndex, c.maxClients = clientIndex, maxClients
	c.log.Info("netcode client connected in loopback mode", "client_index", clientIndex, "max_clients", maxClients)
	c.setState(Connected)
	return nil
}

// DisconnectLoopback leaves loopback mode for Disconnected. It does nothing
// if the client is not in loopback mode.
func (c *Client) DisconnectLoopback() {
	if !c.loopback {
		return
	}
	c.log.Info("netcode client disconnected from loopback", "client_index", c.clientIndex)
	c.reset(Disconnected)
}

// IsLoopback reports whether the client is in loopback mode.
func (c *Client) IsLoopback() bool { return c.loopback }

// ProcessLoopbackPacket queues a payload of 1 to 1200 bytes from a server
// in the same process, as if it had arrived in a payload packet with the
// given sequence. It fails, and counts the drop, on a client not in loopback
// mode, for a bad size, or when the receive queue is full.
func (c *Client) ProcessLoopbackPacket(payload []byte, sequence uint64) error {
	if !c.loopback {
		c.stats.Drops[ClientDropLoopbackPayload]++
		return ErrClientNotLoopback
	}
	if len(payload) < 1 || len(payload) > codec.MaxPayloadBytes {
		c.stats.Drops[ClientDropLoopbackPayload]++
		return fmt.Errorf("%w, got %d", codec.ErrPayloadSize, len(payload))
	}
	c.stats.PacketsIn++
	c.stats.BytesIn += uint64(len(payload))
	if !c.queue.push(payload, sequence) {
		c.stats.Drops[ClientDropQueueFull]++
		return ErrClientQueueFull
	}
	return nil
}

// sendLoopback hands a payload to the loopback callback.
func (c *Client) sendLoopback(payload []byte) error {
	c.cfg.SendLoopbackPacket(c.clientIndex, payload, c.nextSequence())
	c.stats.PacketsOut++
	c.stats.BytesOut += uint64(len(payload))
	return nil
}

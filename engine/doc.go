// Package engine is the netcode protocol engine: the dedicated server, the
// client state machine, and connect-token minting for web backends.
//
// Both sides take time as a value (Update(now)), like the reference's
// update(time), so tests drive them with a fake clock and no sleeping.
package engine

import "time"

// Protocol timing and limits shared by server and client.
const (
	// PacketSendRate is how often requests, responses and idle keep-alives
	// are sent (10 Hz).
	PacketSendRate = 10.0
	// PacketSendInterval is 1/PacketSendRate.
	PacketSendInterval = time.Second / 10
	// NumDisconnectPackets is how many redundant disconnect packets are sent.
	NumDisconnectPackets = 10
	// ReceiveQueueSize is the default per-client receive queue length.
	ReceiveQueueSize = 256
)

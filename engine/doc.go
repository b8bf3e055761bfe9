// Package engine is the netcode protocol engine: the dedicated server, the
// client state machine, and connect-token minting for web backends.
//
// A Server runs one shard per socket, each a goroutine of its own by
// default, or none in manual mode, where the caller drives Update(now). The
// application uses one API in both: Poll for connects, disconnects and
// payloads; SendPacket, Broadcast and the disconnects to send; Wait to park.
// The clock is injected (ServerConfig.Clock, and the Update and client
// calls take time as a value, like the reference's update(time)), so tests
// drive either side on a fake clock over batchiotest's in-memory network.
// Connect tokens carry one session each (the reference's 1.4.5 rules).
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
	// DefaultReceiveQueueSize is the default ClientConfig.ReceiveQueueSize.
	DefaultReceiveQueueSize = 256
)

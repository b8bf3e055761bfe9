// Package codec reads and writes the netcode 1.02 wire formats: addresses,
// connect tokens (private 1024-byte and public 2048-byte), challenge tokens
// and the seven packet types.
//
// Everything works on caller-owned byte slices. Nothing here allocates on a
// successful read or write, and no input, however malformed, makes a reader
// panic: readers return a DropReason (an error) naming the check that failed,
// so a server can count drops by reason without allocating.
//
// Cryptography is not done here. Packet readers and writers call a
// PacketOpener / PacketSealer (implemented by package aead) at the exact
// point of the standard's check order, so the codec owns the order and the
// aead package owns the keys.
package codec

// Sizes and limits of the 1.02 wire format.
const (
	VersionInfoBytes       = 13
	ConnectTokenBytes      = 2048
	PrivateTokenBytes      = 1024
	ChallengeTokenBytes    = 300
	ConnectTokenNonceBytes = 24
	KeyBytes               = 32
	MACBytes               = 16
	UserDataBytes          = 256
	MaxServersPerConnect   = 32
	MaxPayloadBytes        = 1200
	MaxPacketBytes         = 1300

	// RequestPacketBytes is the exact size of a connection request packet.
	RequestPacketBytes = 1 + VersionInfoBytes + 8 + 8 + ConnectTokenNonceBytes + PrivateTokenBytes
	// ChallengeBodyBytes is the per-packet data of a challenge or response packet:
	// the challenge token sequence and the encrypted challenge token.
	ChallengeBodyBytes = 8 + ChallengeTokenBytes
	// KeepAliveBodyBytes is the per-packet data of a keep-alive packet.
	KeepAliveBodyBytes = 8
	// MinEncryptedPacketBytes is the smallest encrypted packet: prefix, one
	// sequence byte and the tag.
	MinEncryptedPacketBytes = 1 + 1 + MACBytes
	// PacketAssociatedDataBytes is version info, protocol id and prefix byte.
	PacketAssociatedDataBytes = VersionInfoBytes + 8 + 1
	// TokenAssociatedDataBytes is version info, protocol id and expire timestamp.
	TokenAssociatedDataBytes = VersionInfoBytes + 8 + 8
)

// VersionInfo is "NETCODE 1.02" with its terminating zero byte.
var VersionInfo = [VersionInfoBytes]byte{'N', 'E', 'T', 'C', 'O', 'D', 'E', ' ', '1', '.', '0', '2', 0}

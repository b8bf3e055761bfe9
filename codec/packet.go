package codec

import (
	"bytes"
	"encoding/binary"
)

// PacketType is the low nibble of the prefix byte.
type PacketType uint8

// The seven packet types.
const (
	ConnectionRequest PacketType = iota
	ConnectionDenied
	ConnectionChallenge
	ConnectionResponse
	ConnectionKeepAlive
	ConnectionPayload
	ConnectionDisconnect
	NumPacketTypes
)

var packetTypeNames = [NumPacketTypes]string{
	"connection request", "connection denied", "connection challenge",
	"connection response", "connection keep-alive", "connection payload",
	"connection disconnect",
}

func (t PacketType) String() string {
	if t < NumPacketTypes {
		return packetTypeNames[t]
	}
	return "invalid packet type"
}

// Role is the side reading a packet; it decides which types are accepted.
type Role uint8

const (
	// RoleServer accepts request, response, keep-alive, payload, disconnect.
	RoleServer Role = iota
	// RoleClient accepts denied, challenge, keep-alive, payload, disconnect.
	RoleClient
)

// Allows reports whether the role accepts packets of type t.
func (r Role) Allows(t PacketType) bool {
	switch t {
	case ConnectionKeepAlive, ConnectionPayload, ConnectionDisconnect:
		return true
	case ConnectionRequest, ConnectionResponse:
		return r == RoleServer
	case ConnectionDenied, ConnectionChallenge:
		return r == RoleClient
	}
	return false
}

func (r Role) String() string {
	if r == RoleServer {
		return "server"
	}
	return "client"
}

// PacketOpener authenticates and decrypts the per-packet data of an
// encrypted packet in place. body is the ciphertext followed by the 16-byte
// tag; on success the plaintext is in body[:len(body)-16].
type PacketOpener interface {
	OpenPacket(body []byte, prefix byte, sequence uint64) error
}

// PacketSealer encrypts in place: body holds the plaintext in
// body[:len(body)-16], and the tag is written to the last 16 bytes.
type PacketSealer interface {
	SealPacket(body []byte, prefix byte, sequence uint64) error
}

// TokenOpener decrypts a 1024-byte private connect token in place with the
// server's private key.
type TokenOpener interface {
	OpenPrivateToken(token []byte, protocolID, expireTimestamp uint64, nonce []byte) error
}

// ReplayChecker is the replay window of one session (see ring.Replay).
type ReplayChecker interface {
	AlreadyReceived(sequence uint64) bool
	Advance(sequence uint64)
}

// ReadParams are the inputs a packet reader needs besides the packet.
type ReadParams struct {
	Role       Role
	ProtocolID uint64
	// Now is the current unix time in seconds, for the request's expiry check.
	Now uint64
	// Key opens encrypted packets (the session's receive key). nil drops
	// every encrypted packet with ReasonNoKey.
	Key PacketOpener
	// TokenKey opens the private token of connection requests. nil drops
	// requests with ReasonNoKey.
	TokenKey TokenOpener
	// Replay protects keep-alive, payload and disconnect packets. nil
	// disables replay protection.
	Replay ReplayChecker
}

// Packet is a decoded packet. Slices point into the packet buffer, which
// was decrypted in place; they are valid as long as that buffer is.
type Packet struct {
	Type     PacketType
	Sequence uint64

	// Keep-alive.
	ClientIndex uint32
	MaxClients  uint32

	// Challenge and response.
	ChallengeSequence uint64
	ChallengeToken    []byte // 300 bytes, encrypted with the server's challenge key

	// Payload.
	Payload []byte

	// Request.
	ExpireTimestamp uint64
	TokenNonce      []byte // 24 bytes
	// PrivateToken is the 1024-byte private token: the first 1008 bytes are
	// the decrypted plaintext (read it with ReadPrivateToken) and the last 16
	// are its tag, which identifies the token in the reuse table.
	PrivateToken []byte
}

// bodyBytesOK reports whether n is a valid per-packet data size for t.
func bodyBytesOK(t PacketType, n int) bool {
	switch t {
	case ConnectionDenied, ConnectionDisconnect:
		return n == 0
	case ConnectionChallenge, ConnectionResponse:
		return n == ChallengeBodyBytes
	case ConnectionKeepAlive:
		return n == KeepAliveBodyBytes
	case ConnectionPayload:
		return n >= 1 && n <= MaxPayloadBytes
	}
	return false
}

// ReadPacket reads one datagram, running the standard's checks in its exact
// order and decrypting in place. On failure it returns a DropReason and out
// is unspecified.
//
// Encrypted packets: size >= 18, type < 7, type allowed for the role,
// sequence bytes in [1,8], room for sequence and tag, per-type size, replay
// (types 4..6), decrypt, then advance the replay window.
// Requests: allowed for the role, size 1078, version, protocol id, expiry
// (must be > Now), then decrypt the private token. Reading the private token
// is left to the caller (ReadPrivateToken), as in the reference.
func ReadPacket(pkt []byte, p *ReadParams, out *Packet) error {
	if len(pkt) < 1 {
		return ReasonTooSmall
	}
	prefix := pkt[0]
	if prefix == 0 {
		return readRequest(pkt, p, out)
	}
	if len(pkt) < MinEncryptedPacketBytes {
		return ReasonTooSmall
	}
	t := PacketType(prefix & 0x0f)
	if t >= NumPacketTypes {
		return ReasonInvalidType
	}
	if !p.Role.Allows(t) {
		return ReasonTypeNotAllowed
	}
	seqBytes := int(prefix >> 4)
	if seqBytes < 1 || seqBytes > 8 {
		return ReasonSequenceBytes
	}
	if len(pkt) < 1+seqBytes+MACBytes {
		return ReasonTruncated
	}
	var seq uint64
	for i := seqBytes; i >= 1; i-- {
		seq = seq<<8 | uint64(pkt[i])
	}
	body := pkt[1+seqBytes:]
	n := len(body) - MACBytes
	if !bodyBytesOK(t, n) {
		return ReasonBodySize
	}
	replay := p.Replay != nil && t >= ConnectionKeepAlive
	if replay && p.Replay.AlreadyReceived(seq) {
		return ReasonReplayed
	}
	if p.Key == nil {
		return ReasonNoKey
	}
	if p.Key.OpenPacket(body, prefix, seq) != nil {
		return ReasonDecrypt
	}
	if replay {
		p.Replay.Advance(seq)
	}
	plain := body[:n]
	*out = Packet{Type: t, Sequence: seq}
	switch t {
	case ConnectionChallenge, ConnectionResponse:
		out.ChallengeSequence = binary.LittleEndian.Uint64(plain)
		out.ChallengeToken = plain[8:ChallengeBodyBytes]
	case ConnectionKeepAlive:
		out.ClientIndex = binary.LittleEndian.Uint32(plain)
		out.MaxClients = binary.LittleEndian.Uint32(plain[4:])
	case ConnectionPayload:
		out.Payload = plain
	}
	return nil
}

// Offsets of a connection request's fields.
const (
	requestProtoOff  = 1 + VersionInfoBytes
	requestExpireOff = requestProtoOff + 8
	requestNonceOff  = requestExpireOff + 8
	requestTokenOff  = requestNonceOff + ConnectTokenNonceBytes
)

// CheckRequestPacket runs the checks a connection request must pass before
// its private token is decrypted, in the standard's order: allowed for the
// role, size 1078, version, protocol id, expiry (> Now), and a token key to
// open it with. ReadPacket runs them too; a server calls this first when it
// wants to ration the decryptions (the expensive step) that pass them.
func CheckRequestPacket(pkt []byte, p *ReadParams) error {
	if !p.Role.Allows(ConnectionRequest) {
		return ReasonTypeNotAllowed
	}
	if len(pkt) != RequestPacketBytes {
		return ReasonRequestSize
	}
	if pkt[0] != 0 {
		return ReasonInvalidType
	}
	if !bytes.Equal(pkt[1:1+VersionInfoBytes], VersionInfo[:]) {
		return ReasonVersion
	}
	if binary.LittleEndian.Uint64(pkt[requestProtoOff:]) != p.ProtocolID {
		return ReasonProtocolID
	}
	if binary.LittleEndian.Uint64(pkt[requestExpireOff:]) <= p.Now {
		return ReasonTokenExpired
	}
	if p.TokenKey == nil {
		return ReasonNoKey
	}
	return nil
}

// RequestExpireTimestamp returns the expire timestamp of a connection
// request that passed CheckRequestPacket, for server rules that sit with
// the cheap checks (the restart rule).
func RequestExpireTimestamp(pkt []byte) uint64 {
	if len(pkt) < requestExpireOff+8 {
		return 0
	}
	return binary.LittleEndian.Uint64(pkt[requestExpireOff:])
}

func readRequest(pkt []byte, p *ReadParams, out *Packet) error {
	if err := CheckRequestPacket(pkt, p); err != nil {
		return err
	}
	expire := binary.LittleEndian.Uint64(pkt[requestExpireOff:])
	nonce := pkt[requestNonceOff:requestTokenOff]
	token := pkt[requestTokenOff:RequestPacketBytes]
	if p.TokenKey.OpenPrivateToken(token, p.ProtocolID, expire, nonce) != nil {
		return ReasonTokenDecrypt
	}
	*out = Packet{
		Type:            ConnectionRequest,
		ExpireTimestamp: expire,
		TokenNonce:      nonce,
		PrivateToken:    token,
	}
	return nil
}

// SequenceBytes returns the fewest bytes that hold seq (1 for 0).
func SequenceBytes(seq uint64) int {
	n := 1
	for seq > 0xff {
		seq >>= 8
		n++
	}
	return n
}

// HeaderBytes returns the size of the prefix byte and sequence of a packet
// with sequence seq: the offset of its per-packet data.
func HeaderBytes(seq uint64) int { return 1 + SequenceBytes(seq) }

// PrefixByte returns the prefix byte of an encrypted packet.
func PrefixByte(t PacketType, seq uint64) byte {
	return byte(t) | byte(SequenceBytes(seq))<<4
}

// writeEncrypted writes prefix and sequence, lets fill write the body
// plaintext into buf[hdr:hdr+n], then seals it. It returns the packet size.
func writeEncrypted(buf []byte, t PacketType, seq uint64, n int, key PacketSealer) (int, []byte, error) {
	seqBytes := SequenceBytes(seq)
	hdr := 1 + seqBytes
	total := hdr + n + MACBytes
	if len(buf) < total {
		return 0, nil, ErrBufferTooSmall
	}
	prefix := byte(t) | byte(seqBytes)<<4
	buf[0] = prefix
	s := seq
	for i := 1; i <= seqBytes; i++ {
		buf[i] = byte(s)
		s >>= 8
	}
	return total, buf[hdr:total], nil
}

func seal(key PacketSealer, pkt []byte, seq uint64) error {
	if key == nil {
		return errNoSealer
	}
	seqBytes := int(pkt[0] >> 4)
	return key.SealPacket(pkt[1+seqBytes:], pkt[0], seq)
}

var errNoSealer = errorString("netcode: nil key passed to a packet writer")

type errorString string

func (e errorString) Error() string { return string(e) }

// WriteRequestPacket writes a 1078-byte connection request. nonce must be
// 24 bytes and token the 1024-byte encrypted private token.
func WriteRequestPacket(buf []byte, protocolID, expireTimestamp uint64, nonce, token []byte) (int, error) {
	if len(nonce) != ConnectTokenNonceBytes {
		return 0, ErrNonceSize
	}
	if len(token) != PrivateTokenBytes {
		return 0, ErrTokenSize
	}
	if len(buf) < RequestPacketBytes {
		return 0, ErrBufferTooSmall
	}
	w := writer{buf: buf[:RequestPacketBytes]}
	w.u8(0)
	w.bytes(VersionInfo[:])
	w.u64(protocolID)
	w.u64(expireTimestamp)
	w.bytes(nonce)
	w.bytes(token)
	return RequestPacketBytes, nil
}

// WriteDeniedPacket writes and seals a connection denied packet.
func WriteDeniedPacket(buf []byte, seq uint64, key PacketSealer) (int, error) {
	return writeEmpty(buf, ConnectionDenied, seq, key)
}

// WriteDisconnectPacket writes and seals a connection disconnect packet.
func WriteDisconnectPacket(buf []byte, seq uint64, key PacketSealer) (int, error) {
	return writeEmpty(buf, ConnectionDisconnect, seq, key)
}

func writeEmpty(buf []byte, t PacketType, seq uint64, key PacketSealer) (int, error) {
	n, _, err := writeEncrypted(buf, t, seq, 0, key)
	if err != nil {
		return 0, err
	}
	return n, seal(key, buf[:n], seq)
}

// WriteChallengePacket writes and seals a connection challenge packet.
func WriteChallengePacket(buf []byte, seq, challengeSeq uint64, challengeToken []byte, key PacketSealer) (int, error) {
	return writeChallenge(buf, ConnectionChallenge, seq, challengeSeq, challengeToken, key)
}

// WriteResponsePacket writes and seals a connection response packet.
func WriteResponsePacket(buf []byte, seq, challengeSeq uint64, challengeToken []byte, key PacketSealer) (int, error) {
	return writeChallenge(buf, ConnectionResponse, seq, challengeSeq, challengeToken, key)
}

func writeChallenge(buf []byte, t PacketType, seq, challengeSeq uint64, token []byte, key PacketSealer) (int, error) {
	if len(token) != ChallengeTokenBytes {
		return 0, ErrChallengeSize
	}
	n, body, err := writeEncrypted(buf, t, seq, ChallengeBodyBytes, key)
	if err != nil {
		return 0, err
	}
	binary.LittleEndian.PutUint64(body, challengeSeq)
	copy(body[8:], token)
	return n, seal(key, buf[:n], seq)
}

// WriteKeepAlivePacket writes and seals a connection keep-alive packet.
func WriteKeepAlivePacket(buf []byte, seq uint64, clientIndex, maxClients uint32, key PacketSealer) (int, error) {
	n, body, err := writeEncrypted(buf, ConnectionKeepAlive, seq, KeepAliveBodyBytes, key)
	if err != nil {
		return 0, err
	}
	binary.LittleEndian.PutUint32(body, clientIndex)
	binary.LittleEndian.PutUint32(body[4:], maxClients)
	return n, seal(key, buf[:n], seq)
}

// WritePayloadPacket writes and seals a connection payload packet carrying
// 1 to 1200 bytes. payload may already sit at buf[HeaderBytes(seq):]; the
// copy is then a no-op.
func WritePayloadPacket(buf []byte, seq uint64, payload []byte, key PacketSealer) (int, error) {
	if len(payload) < 1 || len(payload) > MaxPayloadBytes {
		return 0, ErrPayloadSize
	}
	n, body, err := writeEncrypted(buf, ConnectionPayload, seq, len(payload), key)
	if err != nil {
		return 0, err
	}
	copy(body, payload)
	return n, seal(key, buf[:n], seq)
}

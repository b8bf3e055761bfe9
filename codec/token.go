package codec

import (
	"bytes"
	"net/netip"
)

// PrivateToken is the plaintext of the private connect token: what the web
// backend tells the dedicated server about a client. It has fixed-size
// arrays only, so a server can read tokens into one preallocated value.
type PrivateToken struct {
	ClientID           uint64
	TimeoutSeconds     int32 // negative disables timeouts (development only)
	NumServerAddresses int
	ServerAddresses    [MaxServersPerConnect]netip.AddrPort
	ClientToServerKey  [KeyBytes]byte
	ServerToClientKey  [KeyBytes]byte
	UserData           [UserDataBytes]byte
}

// Addresses returns the token's server addresses.
func (t *PrivateToken) Addresses() []netip.AddrPort {
	n := min(max(t.NumServerAddresses, 0), MaxServersPerConnect)
	return t.ServerAddresses[:n]
}

// HasAddress reports whether addr is one of the token's server addresses.
func (t *PrivateToken) HasAddress(addr netip.AddrPort) bool {
	for _, a := range t.Addresses() {
		if a == addr {
			return true
		}
	}
	return false
}

func checkAddresses(addrs []netip.AddrPort) error {
	if len(addrs) < 1 || len(addrs) > MaxServersPerConnect {
		return ErrAddressCount
	}
	for _, a := range addrs {
		if err := CheckAddress(a); err != nil {
			return err
		}
	}
	return nil
}

// writeAddressList writes the address count and the addresses, the same
// in both tokens.
func writeAddressList(w *writer, addrs []netip.AddrPort) {
	w.u32(uint32(len(addrs)))
	for _, a := range addrs {
		writeAddress(w, a)
	}
}

// readAddressList reads an address count in [1,32] and the addresses into
// dst, zeroing the unused entries.
func readAddressList(r *reader, dst *[MaxServersPerConnect]netip.AddrPort) (int, error) {
	n := r.u32()
	if r.short {
		return 0, ReasonTokenUnreadable
	}
	if n < 1 || n > MaxServersPerConnect {
		return 0, ReasonAddressCount
	}
	for i := range int(n) {
		a, err := readAddress(r)
		if err != nil {
			return 0, err
		}
		dst[i] = a
	}
	clear(dst[n:])
	return int(n), nil
}

// WritePrivateToken writes t as the 1024-byte plaintext private token into
// buf[:1024], zero padded. The last 16 bytes (room for the tag) are zero.
func WritePrivateToken(buf []byte, t *PrivateToken) error {
	if t.NumServerAddresses < 1 || t.NumServerAddresses > MaxServersPerConnect {
		return ErrAddressCount
	}
	if err := checkAddresses(t.Addresses()); err != nil {
		return err
	}
	if len(buf) < PrivateTokenBytes {
		return ErrBufferTooSmall
	}
	w := writer{buf: buf[:PrivateTokenBytes]}
	w.u64(t.ClientID)
	w.u32(uint32(t.TimeoutSeconds))
	writeAddressList(&w, t.Addresses())
	w.bytes(t.ClientToServerKey[:])
	w.bytes(t.ServerToClientKey[:])
	w.bytes(t.UserData[:])
	w.zeroRest()
	if w.overflow { // cannot happen: 32 IPv6 addresses fit
		return ErrBufferTooSmall
	}
	return nil
}

// ReadPrivateToken reads a decrypted private token from buf (at least the
// 1008 plaintext bytes) into t. It fails with ReasonAddressCount,
// ReasonAddressType or ReasonTokenUnreadable; t is then unspecified.
func ReadPrivateToken(buf []byte, t *PrivateToken) error {
	if len(buf) > PrivateTokenBytes-MACBytes {
		buf = buf[:PrivateTokenBytes-MACBytes]
	}
	r := reader{buf: buf}
	t.ClientID = r.u64()
	t.TimeoutSeconds = int32(r.u32())
	n, err := readAddressList(&r, &t.ServerAddresses)
	if err != nil {
		return err
	}
	t.NumServerAddresses = n
	r.bytes(t.ClientToServerKey[:])
	r.bytes(t.ServerToClientKey[:])
	r.bytes(t.UserData[:])
	if r.short {
		return ReasonTokenUnreadable
	}
	return nil
}

// ConnectToken is the 2048-byte token a web backend gives a client: public
// data the client reads plus the encrypted private token it forwards.
type ConnectToken struct {
	ProtocolID         uint64
	CreateTimestamp    uint64
	ExpireTimestamp    uint64
	Nonce              [ConnectTokenNonceBytes]byte
	PrivateData        [PrivateTokenBytes]byte // encrypted private token
	TimeoutSeconds     int32
	NumServerAddresses int
	ServerAddresses    [MaxServersPerConnect]netip.AddrPort
	ClientToServerKey  [KeyBytes]byte
	ServerToClientKey  [KeyBytes]byte
}

// Addresses returns the public server addresses the client dials.
func (t *ConnectToken) Addresses() []netip.AddrPort {
	n := min(max(t.NumServerAddresses, 0), MaxServersPerConnect)
	return t.ServerAddresses[:n]
}

// WriteConnectToken writes t into buf[:2048], zero padded.
func WriteConnectToken(buf []byte, t *ConnectToken) error {
	if t.NumServerAddresses < 1 || t.NumServerAddresses > MaxServersPerConnect {
		return ErrAddressCount
	}
	if err := checkAddresses(t.Addresses()); err != nil {
		return err
	}
	if len(buf) < ConnectTokenBytes {
		return ErrBufferTooSmall
	}
	w := writer{buf: buf[:ConnectTokenBytes]}
	w.bytes(VersionInfo[:])
	w.u64(t.ProtocolID)
	w.u64(t.CreateTimestamp)
	w.u64(t.ExpireTimestamp)
	w.bytes(t.Nonce[:])
	w.bytes(t.PrivateData[:])
	w.u32(uint32(t.TimeoutSeconds))
	writeAddressList(&w, t.Addresses())
	w.bytes(t.ClientToServerKey[:])
	w.bytes(t.ServerToClientKey[:])
	w.zeroRest()
	if w.overflow {
		return ErrBufferTooSmall
	}
	return nil
}

// ReadConnectToken reads a 2048-byte connect token. It checks the version
// info, the address count and the address types; whether the timestamps make
// sense is the client's decision (it needs the current time).
func ReadConnectToken(buf []byte, t *ConnectToken) error {
	if len(buf) < ConnectTokenBytes {
		return ReasonTooSmall
	}
	r := reader{buf: buf[:ConnectTokenBytes]}
	if !bytes.Equal(buf[:VersionInfoBytes], VersionInfo[:]) {
		return ReasonVersion
	}
	r.pos = VersionInfoBytes
	t.ProtocolID = r.u64()
	t.CreateTimestamp = r.u64()
	t.ExpireTimestamp = r.u64()
	r.bytes(t.Nonce[:])
	r.bytes(t.PrivateData[:])
	t.TimeoutSeconds = int32(r.u32())
	n, err := readAddressList(&r, &t.ServerAddresses)
	if err != nil {
		return err
	}
	t.NumServerAddresses = n
	r.bytes(t.ClientToServerKey[:])
	r.bytes(t.ServerToClientKey[:])
	if r.short {
		return ReasonTokenUnreadable
	}
	return nil
}

// ChallengeToken is the plaintext of the challenge token the server sends a
// client and reads back from its response.
type ChallengeToken struct {
	ClientID uint64
	UserData [UserDataBytes]byte
}

// WriteChallengeToken writes t into buf[:300], zero padded (the last 16
// bytes are room for the tag).
func WriteChallengeToken(buf []byte, t *ChallengeToken) error {
	if len(buf) < ChallengeTokenBytes {
		return ErrBufferTooSmall
	}
	w := writer{buf: buf[:ChallengeTokenBytes]}
	w.u64(t.ClientID)
	w.bytes(t.UserData[:])
	w.zeroRest()
	return nil
}

// ReadChallengeToken reads a decrypted challenge token (at least 264 bytes).
func ReadChallengeToken(buf []byte, t *ChallengeToken) error {
	r := reader{buf: buf}
	t.ClientID = r.u64()
	r.bytes(t.UserData[:])
	if r.short {
		return ReasonTokenUnreadable
	}
	return nil
}

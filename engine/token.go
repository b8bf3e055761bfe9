package engine

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
)

// TokenParams are the inputs a web backend gives GenerateConnectToken.
type TokenParams struct {
	// ProtocolID identifies the game; servers reject tokens for other ids.
	ProtocolID uint64
	// PrivateKey is the 32-byte key shared by the web backend and the
	// dedicated servers.
	PrivateKey []byte
	// ClientID identifies the authenticated client; a server admits one
	// connection per client id.
	ClientID uint64
	// PublicAddresses are what the client dials, in order of preference
	// (1 to 32).
	PublicAddresses []netip.AddrPort
	// InternalAddresses are what the servers check against their own
	// address (behind NAT, load balancers or port mapping they differ from
	// the public ones). Empty means the same as PublicAddresses; otherwise
	// it must have the same length.
	InternalAddresses []netip.AddrPort
	// ExpireSeconds is the token's life from Now. Negative means it never
	// expires (the expire timestamp is then 2^64-1, like the reference).
	ExpireSeconds int64
	// TimeoutSeconds is the connection timeout both sides use. Negative
	// disables timeouts (development only); 0 never lets a handshake finish.
	TimeoutSeconds int32
	// UserData is up to 256 bytes handed to the server application; it is
	// zero padded.
	UserData []byte
	// Now is the create time; zero means time.Now().
	Now time.Time
}

// Errors returned by GenerateConnectToken for bad arguments.
var (
	ErrPrivateKeySize  = errors.New("netcode: private key must be 32 bytes")
	ErrUserDataSize    = errors.New("netcode: user data must be at most 256 bytes")
	ErrAddressMismatch = errors.New("netcode: internal addresses must be empty or as many as the public addresses")
	ErrTokenBase64     = errors.New("netcode: connect token is not base64 of 2048 bytes")
	ErrCreateTime      = errors.New("netcode: token create time must not be before 1970")
)

// GenerateConnectToken mints a 2048-byte connect token with fresh random
// session keys and nonce. It is what a web backend calls after it has
// authenticated a client.
func GenerateConnectToken(p TokenParams) ([]byte, error) {
	token := make([]byte, codec.ConnectTokenBytes)
	if err := writeConnectToken(token, &p); err != nil {
		return nil, err
	}
	return token, nil
}

// writeConnectToken mints the token into dst (at least 2048 bytes).
func writeConnectToken(dst []byte, p *TokenParams) error {
	if len(p.PrivateKey) != codec.KeyBytes {
		return fmt.Errorf("%w, got %d", ErrPrivateKeySize, len(p.PrivateKey))
	}
	if len(p.UserData) > codec.UserDataBytes {
		return fmt.Errorf("%w, got %d", ErrUserDataSize, len(p.UserData))
	}
	n := len(p.PublicAddresses)
	if n < 1 || n > codec.MaxServersPerConnect {
		return fmt.Errorf("%w, got %d", codec.ErrAddressCount, n)
	}
	internal := p.InternalAddresses
	if len(internal) == 0 {
		internal = p.PublicAddresses
	}
	if len(internal) != n {
		return fmt.Errorf("%w: %d public, %d internal", ErrAddressMismatch, n, len(internal))
	}
	for i := range n {
		if err := codec.CheckAddress(p.PublicAddresses[i]); err != nil {
			return fmt.Errorf("public address %d: %w", i, err)
		}
		if err := codec.CheckAddress(internal[i]); err != nil {
			return fmt.Errorf("internal address %d: %w", i, err)
		}
	}
	if len(dst) < codec.ConnectTokenBytes {
		return codec.ErrBufferTooSmall
	}
	now := p.Now
	if now.IsZero() {
		now = time.Now()
	}
	if now.Unix() < 0 {
		return ErrCreateTime
	}
	create := uint64(now.Unix())
	expire := uint64(math.MaxUint64) // never expires, as the reference writes it
	if p.ExpireSeconds >= 0 {
		// Two non-negative int64s sum to at most 2^64-2: no overflow.
		expire = create + uint64(p.ExpireSeconds)
	}

	var priv codec.PrivateToken
	priv.ClientID = p.ClientID
	priv.TimeoutSeconds = p.TimeoutSeconds
	priv.NumServerAddresses = n
	copy(priv.ServerAddresses[:], internal)
	copy(priv.UserData[:], p.UserData)
	if _, err := rand.Read(priv.ClientToServerKey[:]); err != nil {
		return err
	}
	if _, err := rand.Read(priv.ServerToClientKey[:]); err != nil {
		return err
	}

	ct := codec.ConnectToken{
		ProtocolID:         p.ProtocolID,
		CreateTimestamp:    create,
		ExpireTimestamp:    expire,
		TimeoutSeconds:     p.TimeoutSeconds,
		NumServerAddresses: n,
		ClientToServerKey:  priv.ClientToServerKey,
		ServerToClientKey:  priv.ServerToClientKey,
	}
	copy(ct.ServerAddresses[:], p.PublicAddresses)
	if _, err := rand.Read(ct.Nonce[:]); err != nil {
		return err
	}
	if err := codec.WritePrivateToken(ct.PrivateData[:], &priv); err != nil {
		return err
	}
	key, err := aead.NewTokenKey(p.PrivateKey)
	if err != nil {
		return err
	}
	if err := key.SealPrivateToken(ct.PrivateData[:], p.ProtocolID, expire, ct.Nonce[:]); err != nil {
		return err
	}
	return codec.WriteConnectToken(dst, &ct)
}

// EncodeToken returns the token as standard base64, the form a web backend
// usually returns over HTTPS.
func EncodeToken(token []byte) string {
	return base64.StdEncoding.EncodeToString(token)
}

// DecodeToken parses a base64 connect token (standard or URL alphabet,
// padded or not) and checks that it is 2048 bytes.
func DecodeToken(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err == nil {
			if len(b) != codec.ConnectTokenBytes {
				return nil, fmt.Errorf("%w: decoded %d bytes", ErrTokenBase64, len(b))
			}
			return b, nil
		}
	}
	return nil, ErrTokenBase64
}

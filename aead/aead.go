// Package aead holds the netcode keys: ChaCha20-Poly1305 (IETF) for packets
// and challenge tokens, XChaCha20-Poly1305 for private connect tokens, over
// golang.org/x/crypto.
//
// Creating a cipher allocates, sealing and opening in place do not. So each
// key type creates its cipher once, when the session (or server) starts, and
// keeps its nonce and associated-data arrays inside the value. Because those
// arrays are reused, a key value must not be used by two goroutines at once:
// give each goroutine (each server shard) its own.
package aead

import (
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/netcode-go/netcode/codec"
	"golang.org/x/crypto/chacha20poly1305"
)

// KeyBytes is the size of every key.
const KeyBytes = chacha20poly1305.KeySize

var (
	// ErrOpen is returned when a ciphertext fails authentication.
	ErrOpen = errors.New("netcode: message authentication failed")
	// ErrShort is returned when a buffer cannot hold the tag.
	ErrShort = errors.New("netcode: buffer shorter than the 16-byte tag")
	// ErrNilKey is returned by the methods of a nil key.
	ErrNilKey = errors.New("netcode: nil key")
)

func checkKey(key []byte) error {
	if len(key) != KeyBytes {
		return fmt.Errorf("netcode: key must be %d bytes, got %d", KeyBytes, len(key))
	}
	return nil
}

// GenerateKey returns a new random 32-byte key.
func GenerateKey() ([KeyBytes]byte, error) {
	var k [KeyBytes]byte
	_, err := rand.Read(k[:])
	return k, err
}

// PacketKey seals or opens the packets of one direction of one session.
type PacketKey struct {
	aead  cipher.AEAD
	nonce [chacha20poly1305.NonceSize]byte
	ad    [codec.PacketAssociatedDataBytes]byte
}

var (
	_ codec.PacketSealer = (*PacketKey)(nil)
	_ codec.PacketOpener = (*PacketKey)(nil)
)

// NewPacketKey creates the cipher for a 32-byte session key. The protocol id
// is fixed for the key's life: it is part of every packet's associated data.
func NewPacketKey(key []byte, protocolID uint64) (*PacketKey, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	a, err := chacha20poly1305.New(key)
	if err != nil {
		return nil, err
	}
	k := &PacketKey{aead: a}
	codec.PutPacketAssociatedData(k.ad[:], protocolID, 0)
	return k, nil
}

// SealPacket encrypts body[:len(body)-16] in place and writes the tag into
// the last 16 bytes.
func (k *PacketKey) SealPacket(body []byte, prefix byte, seq uint64) error {
	if k == nil {
		return ErrNilKey
	}
	n := len(body) - codec.MACBytes
	if n < 0 {
		return ErrShort
	}
	codec.PutSequenceNonce(k.nonce[:], seq)
	k.ad[codec.PacketAssociatedDataBytes-1] = prefix
	k.aead.Seal(body[:0], k.nonce[:], body[:n], k.ad[:])
	return nil
}

// OpenPacket authenticates body (ciphertext then tag) and decrypts it in
// place into body[:len(body)-16].
func (k *PacketKey) OpenPacket(body []byte, prefix byte, seq uint64) error {
	if k == nil {
		return ErrNilKey
	}
	if len(body) < codec.MACBytes {
		return ErrShort
	}
	codec.PutSequenceNonce(k.nonce[:], seq)
	k.ad[codec.PacketAssociatedDataBytes-1] = prefix
	if _, err := k.aead.Open(body[:0], k.nonce[:], body, k.ad[:]); err != nil {
		return ErrOpen
	}
	return nil
}

// ChallengeKey seals and opens challenge tokens. A server makes a new random
// one each time it starts, so challenge nonces (the challenge sequence) never
// repeat under one key.
type ChallengeKey struct {
	aead  cipher.AEAD
	nonce [chacha20poly1305.NonceSize]byte
}

// NewChallengeKey creates the cipher for a 32-byte challenge key.
func NewChallengeKey(key []byte) (*ChallengeKey, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	a, err := chacha20poly1305.New(key)
	if err != nil {
		return nil, err
	}
	return &ChallengeKey{aead: a}, nil
}

// Seal encrypts the 300-byte challenge token in token[:300] in place: the
// first 284 bytes are encrypted and the tag fills the last 16.
func (k *ChallengeKey) Seal(token []byte, seq uint64) error {
	if k == nil {
		return ErrNilKey
	}
	if len(token) != codec.ChallengeTokenBytes {
		return codec.ErrChallengeSize
	}
	codec.PutSequenceNonce(k.nonce[:], seq)
	k.aead.Seal(token[:0], k.nonce[:], token[:codec.ChallengeTokenBytes-codec.MACBytes], nil)
	return nil
}

// Open authenticates and decrypts a 300-byte challenge token in place.
func (k *ChallengeKey) Open(token []byte, seq uint64) error {
	if k == nil {
		return ErrNilKey
	}
	if len(token) != codec.ChallengeTokenBytes {
		return codec.ErrChallengeSize
	}
	codec.PutSequenceNonce(k.nonce[:], seq)
	if _, err := k.aead.Open(token[:0], k.nonce[:], token, nil); err != nil {
		return ErrOpen
	}
	return nil
}

// TokenKey seals and opens private connect tokens with the private key
// shared by the web backend and the dedicated servers.
type TokenKey struct {
	aead cipher.AEAD
	ad   [codec.TokenAssociatedDataBytes]byte
}

var _ codec.TokenOpener = (*TokenKey)(nil)

// NewTokenKey creates the XChaCha20-Poly1305 cipher for a 32-byte private key.
func NewTokenKey(privateKey []byte) (*TokenKey, error) {
	if err := checkKey(privateKey); err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	a, err := chacha20poly1305.NewX(privateKey)
	if err != nil {
		return nil, err
	}
	return &TokenKey{aead: a}, nil
}

// SealPrivateToken encrypts the 1024-byte plaintext token in place: the
// first 1008 bytes are encrypted and the tag fills the last 16.
func (k *TokenKey) SealPrivateToken(token []byte, protocolID, expireTimestamp uint64, nonce []byte) error {
	if k == nil {
		return ErrNilKey
	}
	if len(token) != codec.PrivateTokenBytes {
		return codec.ErrTokenSize
	}
	if len(nonce) != codec.ConnectTokenNonceBytes {
		return codec.ErrNonceSize
	}
	codec.PutTokenAssociatedData(k.ad[:], protocolID, expireTimestamp)
	k.aead.Seal(token[:0], nonce, token[:codec.PrivateTokenBytes-codec.MACBytes], k.ad[:])
	return nil
}

// OpenPrivateToken authenticates and decrypts a 1024-byte private token in
// place; the tag stays in the last 16 bytes.
func (k *TokenKey) OpenPrivateToken(token []byte, protocolID, expireTimestamp uint64, nonce []byte) error {
	if k == nil {
		return ErrNilKey
	}
	if len(token) != codec.PrivateTokenBytes {
		return codec.ErrTokenSize
	}
	if len(nonce) != codec.ConnectTokenNonceBytes {
		return codec.ErrNonceSize
	}
	codec.PutTokenAssociatedData(k.ad[:], protocolID, expireTimestamp)
	if _, err := k.aead.Open(token[:0], nonce, token, k.ad[:]); err != nil {
		return ErrOpen
	}
	return nil
}

package codec

import "errors"

// DropReason says which check rejected an input. It is the error type every
// reader returns, and it is small and comparable so that a server can keep
// one counter per reason: counters[reason]++.
type DropReason uint8

// Drop reasons, in roughly the order the checks run.
const (
	ReasonNone DropReason = iota
	ReasonTooSmall
	ReasonInvalidType
	ReasonTypeNotAllowed
	ReasonSequenceBytes
	ReasonTruncated
	ReasonBodySize
	ReasonReplayed
	ReasonNoKey
	ReasonDecrypt
	ReasonRequestSize
	ReasonVersion
	ReasonProtocolID
	ReasonTokenExpired
	ReasonTokenDecrypt
	ReasonTokenUnreadable
	ReasonAddressType
	ReasonAddressCount
	ReasonBufferTooSmall

	// NumDropReasons sizes per-reason counter arrays.
	NumDropReasons
)

var reasonText = [NumDropReasons]string{
	ReasonNone:            "no error",
	ReasonTooSmall:        "packet smaller than the smallest valid packet",
	ReasonInvalidType:     "packet type is not 0..6",
	ReasonTypeNotAllowed:  "packet type not accepted by this role",
	ReasonSequenceBytes:   "sequence byte count not in [1,8]",
	ReasonTruncated:       "packet too short for its sequence and tag",
	ReasonBodySize:        "per-packet data has the wrong size for its type",
	ReasonReplayed:        "sequence already received or older than the replay window",
	ReasonNoKey:           "no key to decrypt this packet",
	ReasonDecrypt:         "packet failed to decrypt",
	ReasonRequestSize:     "connection request is not 1078 bytes",
	ReasonVersion:         "version info is not NETCODE 1.02",
	ReasonProtocolID:      "protocol id does not match",
	ReasonTokenExpired:    "connect token expired",
	ReasonTokenDecrypt:    "connect token failed to decrypt",
	ReasonTokenUnreadable: "connect token contents are malformed",
	ReasonAddressType:     "address type is not 1 (IPv4) or 2 (IPv6)",
	ReasonAddressCount:    "server address count not in [1,32]",
	ReasonBufferTooSmall:  "buffer too small",
}

func (r DropReason) Error() string {
	if r < NumDropReasons {
		return "netcode: " + reasonText[r]
	}
	return "netcode: unknown drop reason"
}

// String returns a short description of the reason.
func (r DropReason) String() string {
	if r < NumDropReasons {
		return reasonText[r]
	}
	return "unknown"
}

// ReasonOf returns the DropReason carried by err, or ReasonNone if err is nil
// or is not a DropReason.
func ReasonOf(err error) DropReason {
	// Readers return a bare DropReason: a type assertion finds it without
	// the allocation errors.As may make on a per-packet path.
	if r, ok := err.(DropReason); ok {
		return r
	}
	var r DropReason
	if errors.As(err, &r) {
		return r
	}
	return ReasonNone
}

// Argument errors returned by writers. They say what is allowed.
var (
	ErrAddressInvalid    = errors.New("netcode: address is the zero value; want an IPv4 or IPv6 address and port")
	ErrAddressZone       = errors.New("netcode: address has an IPv6 zone, which the wire format cannot carry")
	ErrAddressCount      = errors.New("netcode: number of server addresses must be between 1 and 32")
	ErrPayloadSize       = errors.New("netcode: payload must be 1 to 1200 bytes")
	ErrBufferTooSmall    = errors.New("netcode: output buffer too small for this packet or token")
	ErrTokenSize         = errors.New("netcode: encrypted private connect token must be exactly 1024 bytes")
	ErrChallengeSize     = errors.New("netcode: encrypted challenge token must be exactly 300 bytes")
	ErrNonceSize         = errors.New("netcode: connect token nonce must be exactly 24 bytes")
	ErrSequenceTooLarge  = errors.New("netcode: sequence needs more bytes than the packet has room for")
	ErrTimestampsInvalid = errors.New("netcode: create timestamp is after expire timestamp")
)

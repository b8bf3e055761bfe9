package bench

import "github.com/netcode-go/netcode/codec"

// readPayloadHeader reads the clear header of a netcode payload packet:
// the prefix byte (type and sequence length) and the sequence, which the
// standard sends in the clear. It returns the sequence and the size of
// the payload the packet carries once opened (its length less header and
// MAC). ok is false for anything else: another type, a bad sequence
// length, or a packet too short for a payload of at least one byte.
//
// It decides nothing about authenticity: the load uses it to account
// replies to clients that do not decrypt them (LoadConfig.SampleEvery),
// where a forged datagram would be counted; on loopback there are none.
func readPayloadHeader(pkt []byte) (seq uint64, payloadBytes int, ok bool) {
	if len(pkt) < 1 {
		return 0, 0, false
	}
	prefix := pkt[0]
	if codec.PacketType(prefix&0x0f) != codec.ConnectionPayload {
		return 0, 0, false
	}
	seqBytes := int(prefix >> 4)
	if seqBytes < 1 || seqBytes > 8 {
		return 0, 0, false
	}
	n := len(pkt) - 1 - seqBytes - codec.MACBytes
	if n < 1 {
		return 0, 0, false
	}
	for i := seqBytes; i >= 1; i-- {
		seq = seq<<8 | uint64(pkt[i])
	}
	return seq, n, true
}

package reliable

// DropReason says which check refused a datagram. It is small and comparable
// so an owner can keep one counter per reason (Endpoint.Drops does). String
// returns the reason's name in the reliable vectors (e.g. "too_large"), which
// also suits a metric label.
type DropReason uint8

// Drop reasons, in the order the checks run. Each comment names the C
// counters the datagram also moves (see Counter).
const (
	// DropNone: nothing was refused (the datagram was delivered or stored).
	DropNone DropReason = iota

	// DropTooLarge: the datagram is longer than MaxPacketSize + 14; checked
	// before anything else. packets_too_large_to_receive.
	DropTooLarge
	// DropHeaderTruncated: a packet (prefix bit 0 clear) shorter than its
	// prefix byte promises, or empty. packets_received, packets_invalid.
	DropHeaderTruncated
	// DropPayloadTooLarge: a packet's payload is longer than MaxPacketSize.
	// packets_received, packets_too_large_to_receive.
	DropPayloadTooLarge
	// DropStale: the sequence is older than the received-packets window.
	// packets_received, packets_stale.
	DropStale
	// DropDuplicate: the sequence was already received. packets_received,
	// packets_duplicate.
	DropDuplicate

	// DropFragmentTruncated: a fragment shorter than its 5-byte header.
	// fragments_invalid (so are the fragment reasons up to DropFragmentCountMismatch).
	DropFragmentTruncated
	// DropFragmentPrefixInvalid: prefix bit 0 set but the byte is not 1.
	DropFragmentPrefixInvalid
	// DropFragmentCountExceedsMax: the fragment count exceeds MaxFragments.
	DropFragmentCountExceedsMax
	// DropFragmentIDOutOfRange: the fragment id is not below the count.
	DropFragmentIDOutOfRange
	// DropEmbeddedHeaderInvalid: fragment 0's packet header is truncated or
	// has prefix bit 0 set.
	DropEmbeddedHeaderInvalid
	// DropEmbeddedSequenceMismatch: fragment 0's packet header carries
	// another sequence than the fragment header.
	DropEmbeddedSequenceMismatch
	// DropEmbeddedHeaderNonCanonical: fragment 0's packet header is not the
	// minimal encoding of what it says.
	DropEmbeddedHeaderNonCanonical
	// DropFragmentTooLarge: a fragment carries more than FragmentSize bytes.
	DropFragmentTooLarge
	// DropFragmentWrongSize: a fragment other than the last does not carry
	// exactly FragmentSize bytes.
	DropFragmentWrongSize
	// DropFragmentStale: the sequence is too old for the reassembly window.
	DropFragmentStale
	// DropFragmentCountMismatch: the fragment count differs from the one
	// of the reassembly in progress for that sequence.
	DropFragmentCountMismatch
	// DropFragmentDuplicate: that fragment is already stored (the first
	// copy wins). No C counter.
	DropFragmentDuplicate
	// DropFragmentOfReceivedPacket: the packet was already received. No C
	// counter.
	DropFragmentOfReceivedPacket
	// DropReassembledTooLarge: the last fragment completed a packet longer
	// than MaxPacketSize + 14. fragments_received,
	// packets_too_large_to_receive.
	DropReassembledTooLarge

	// DropReassemblyPoolExhausted: a fragment would start a new reassembly
	// but the Pool has no free buffer, or the endpoint already holds its
	// share. Not in the C library (it allocates); no C counter.
	DropReassemblyPoolExhausted

	// DropReassemblyEvicted counts reassemblies in progress an endpoint
	// gave up at its share of the pool for a newer packet's fragment (not
	// a refused datagram: the fragment that evicted it was stored).
	DropReassemblyEvicted

	// NumDropReasons sizes per-reason counter arrays.
	NumDropReasons
)

var dropNames = [NumDropReasons]string{
	DropNone:                       "none",
	DropTooLarge:                   "too_large",
	DropHeaderTruncated:            "header_truncated",
	DropPayloadTooLarge:            "payload_too_large",
	DropStale:                      "stale",
	DropDuplicate:                  "duplicate",
	DropFragmentTruncated:          "fragment_truncated",
	DropFragmentPrefixInvalid:      "fragment_prefix_invalid",
	DropFragmentCountExceedsMax:    "fragment_count_exceeds_max",
	DropFragmentIDOutOfRange:       "fragment_id_out_of_range",
	DropEmbeddedHeaderInvalid:      "embedded_header_invalid",
	DropEmbeddedSequenceMismatch:   "embedded_sequence_mismatch",
	DropEmbeddedHeaderNonCanonical: "embedded_header_non_canonical",
	DropFragmentTooLarge:           "fragment_too_large",
	DropFragmentWrongSize:          "fragment_wrong_size",
	DropFragmentStale:              "fragment_stale",
	DropFragmentCountMismatch:      "fragment_count_mismatch",
	DropFragmentDuplicate:          "fragment_duplicate",
	DropFragmentOfReceivedPacket:   "fragment_of_received_packet",
	DropReassembledTooLarge:        "reassembled_too_large",
	DropReassemblyPoolExhausted:    "reassembly_pool_exhausted",
	DropReassemblyEvicted:          "reassembly_evicted",
}

// String returns the reason's name as the vectors spell it.
func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropNames[r]
	}
	return "unknown"
}

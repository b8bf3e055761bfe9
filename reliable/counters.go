package reliable

// Counter indexes Counters. The order is the C library's
// (reliable_endpoint_counters), so a Counters value compares directly with
// the vectors' counter arrays.
type Counter uint8

// The C library's endpoint counters.
const (
	PacketsSent              Counter = iota // packets Send transmitted
	PacketsReceived                         // packets (not fragments) read, valid or not
	PacketsAcked                            // sent packets the far end acked
	PacketsStale                            // packets older than the receive window
	PacketsInvalid                          // packets with a truncated header
	PacketsTooLargeToSend                   // Send refusals: payload too large
	PacketsTooLargeToReceive                // datagrams or packets over the limits
	FragmentsSent                           // fragment datagrams Send produced
	FragmentsReceived                       // fragments stored
	FragmentsInvalid                        // fragments refused by a check
	PacketsDuplicate                        // packets already received

	// NumCounters is the number of counters.
	NumCounters
)

var counterNames = [NumCounters]string{
	PacketsSent:              "packets_sent",
	PacketsReceived:          "packets_received",
	PacketsAcked:             "packets_acked",
	PacketsStale:             "packets_stale",
	PacketsInvalid:           "packets_invalid",
	PacketsTooLargeToSend:    "packets_too_large_to_send",
	PacketsTooLargeToReceive: "packets_too_large_to_receive",
	FragmentsSent:            "fragments_sent",
	FragmentsReceived:        "fragments_received",
	FragmentsInvalid:         "fragments_invalid",
	PacketsDuplicate:         "packets_duplicate",
}

// String returns the counter's name as the C library and vectors spell it.
func (c Counter) String() string {
	if c < NumCounters {
		return counterNames[c]
	}
	return "unknown"
}

// Counters are an endpoint's counters since it was created or reset,
// indexed by Counter.
type Counters [NumCounters]uint64

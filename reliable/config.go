package reliable

import (
	"fmt"
	"math"
)

// Config has the 13 numeric fields of the C library's reliable_config_t.
// Both ends of a connection should use the same values: the receiver checks
// fragments against its own FragmentSize and MaxFragments.
type Config struct {
	// MaxPacketSize is the largest payload Send accepts and Receive delivers.
	MaxPacketSize int
	// FragmentAbove: a payload longer than this is sent as fragments.
	FragmentAbove int
	// FragmentSize is the payload carried by every fragment but the last.
	FragmentSize int
	// MaxFragments bounds the fragments of one packet (at most 256).
	MaxFragments int
	// AckBufferSize bounds the acks held between ClearAcks calls.
	AckBufferSize int
	// SentPacketsBufferSize is the number of sent-packet records (the ack
	// and loss window).
	SentPacketsBufferSize int
	// ReceivedPacketsBufferSize is the number of received-packet records
	// (the stale and duplicate window).
	ReceivedPacketsBufferSize int
	// FragmentReassemblyBufferSize is the number of packets in reassembly
	// at once (the fragment window).
	FragmentReassemblyBufferSize int
	// RTTSmoothingFactor is the weight of a new RTT sample.
	RTTSmoothingFactor float32
	// RTTHistorySize is the number of RTT samples kept for min, max,
	// average and jitter.
	RTTHistorySize int
	// PacketLossSmoothingFactor is the weight of a new loss measurement.
	PacketLossSmoothingFactor float32
	// BandwidthSmoothingFactor is the weight of a new bandwidth measurement.
	BandwidthSmoothingFactor float32
	// PacketHeaderSize is the per-packet overhead (IP and UDP headers)
	// added to every packet in the bandwidth estimates.
	PacketHeaderSize int
}

// DefaultConfig returns the C library's defaults.
func DefaultConfig() Config {
	return Config{
		MaxPacketSize:                16 * 1024,
		FragmentAbove:                1024,
		FragmentSize:                 1024,
		MaxFragments:                 16,
		AckBufferSize:                256,
		SentPacketsBufferSize:        256,
		ReceivedPacketsBufferSize:    256,
		FragmentReassemblyBufferSize: 64,
		RTTSmoothingFactor:           0.0025,
		RTTHistorySize:               512,
		PacketLossSmoothingFactor:    0.1,
		BandwidthSmoothingFactor:     0.1,
		PacketHeaderSize:             28,
	}
}

// Limits Validate enforces beyond the C library's own (which only asks for
// positive sizes): they keep every buffer an endpoint preallocates bounded.
const (
	maxPacketSizeLimit = 1 << 24 // 16 MiB
	maxFragmentsLimit  = 256     // the wire's count byte
	maxBufferEntries   = 1 << 16 // one entry per 16-bit sequence
	maxHeaderSizeLimit = 1 << 16
)

// Validate reports the first field outside its allowed range. Every
// configuration the C library accepts with sizes in these ranges is valid;
// a configuration whose MaxPacketSize needs more than MaxFragments fragments
// is valid too (the C library accepts it), and Send refuses such packets.
func (c Config) Validate() error {
	ints := [...]struct {
		name     string
		v        int
		min, max int
	}{
		{"MaxPacketSize", c.MaxPacketSize, 1, maxPacketSizeLimit},
		{"FragmentAbove", c.FragmentAbove, 1, maxPacketSizeLimit},
		{"FragmentSize", c.FragmentSize, 1, maxPacketSizeLimit},
		{"MaxFragments", c.MaxFragments, 1, maxFragmentsLimit},
		{"AckBufferSize", c.AckBufferSize, 1, maxBufferEntries},
		{"SentPacketsBufferSize", c.SentPacketsBufferSize, 1, maxBufferEntries},
		{"ReceivedPacketsBufferSize", c.ReceivedPacketsBufferSize, 1, maxBufferEntries},
		{"FragmentReassemblyBufferSize", c.FragmentReassemblyBufferSize, 1, maxBufferEntries},
		{"RTTHistorySize", c.RTTHistorySize, 1, maxBufferEntries},
		{"PacketHeaderSize", c.PacketHeaderSize, 0, maxHeaderSizeLimit},
	}
	for _, f := range ints {
		if f.v < f.min || f.v > f.max {
			return fmt.Errorf("reliable: Config.%s is %d; want %d to %d", f.name, f.v, f.min, f.max)
		}
	}
	floats := [...]struct {
		name string
		v    float32
	}{
		{"RTTSmoothingFactor", c.RTTSmoothingFactor},
		{"PacketLossSmoothingFactor", c.PacketLossSmoothingFactor},
		{"BandwidthSmoothingFactor", c.BandwidthSmoothingFactor},
	}
	for _, f := range floats {
		if math.IsNaN(float64(f.v)) || f.v < 0 || f.v > 1 {
			return fmt.Errorf("reliable: Config.%s is %v; want 0 to 1", f.name, f.v)
		}
	}
	return nil
}

// ReassemblyBufferBytes is the size of one reassembly buffer for this
// config: room for the largest packet Receive can deliver and its header
// (fragments beyond it only count towards the length, since such a packet
// is refused as too large). A Pool's buffers must be at least this big.
func (c Config) ReassemblyBufferBytes() int {
	n := c.MaxFragments * c.FragmentSize
	if n > c.MaxPacketSize {
		n = c.MaxPacketSize
	}
	return MaxHeaderBytes + n
}

// MaxDatagramBytes is the longest datagram Send produces with this config:
// a regular packet of FragmentAbove (or MaxPacketSize) bytes, or a first
// fragment with its embedded header.
func (c Config) MaxDatagramBytes() int {
	regular := c.FragmentAbove
	if regular > c.MaxPacketSize {
		regular = c.MaxPacketSize
	}
	regular += MaxHeaderBytes
	fragment := FragmentHeaderBytes + MaxHeaderBytes + c.FragmentSize
	if c.MaxPacketSize <= c.FragmentAbove {
		return regular
	}
	return max(regular, fragment)
}

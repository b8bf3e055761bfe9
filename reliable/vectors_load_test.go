package reliable_test

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/netcode-go/netcode/reliable"
)

// vectorDir is the public vector set, or $RELIABLE_VECTORS: a directory of
// the same schema with other values.
func vectorDir() string {
	if d := os.Getenv("RELIABLE_VECTORS"); d != "" {
		return d
	}
	return filepath.Join("testdata", "vectors")
}

func loadVectors(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// jsonConfig is a vector's reliable_config_t.
type jsonConfig struct {
	MaxPacketSize                int     `json:"max_packet_size"`
	FragmentAbove                int     `json:"fragment_above"`
	FragmentSize                 int     `json:"fragment_size"`
	MaxFragments                 int     `json:"max_fragments"`
	AckBufferSize                int     `json:"ack_buffer_size"`
	SentPacketsBufferSize        int     `json:"sent_packets_buffer_size"`
	ReceivedPacketsBufferSize    int     `json:"received_packets_buffer_size"`
	FragmentReassemblyBufferSize int     `json:"fragment_reassembly_buffer_size"`
	RTTSmoothingFactor           float64 `json:"rtt_smoothing_factor"`
	RTTHistorySize               int     `json:"rtt_history_size"`
	PacketLossSmoothingFactor    float64 `json:"packet_loss_smoothing_factor"`
	BandwidthSmoothingFactor     float64 `json:"bandwidth_smoothing_factor"`
	PacketHeaderSize             int     `json:"packet_header_size"`
}

func (c jsonConfig) config() reliable.Config {
	return reliable.Config{
		MaxPacketSize:                c.MaxPacketSize,
		FragmentAbove:                c.FragmentAbove,
		FragmentSize:                 c.FragmentSize,
		MaxFragments:                 c.MaxFragments,
		AckBufferSize:                c.AckBufferSize,
		SentPacketsBufferSize:        c.SentPacketsBufferSize,
		ReceivedPacketsBufferSize:    c.ReceivedPacketsBufferSize,
		FragmentReassemblyBufferSize: c.FragmentReassemblyBufferSize,
		RTTSmoothingFactor:           float32(c.RTTSmoothingFactor),
		RTTHistorySize:               c.RTTHistorySize,
		PacketLossSmoothingFactor:    float32(c.PacketLossSmoothingFactor),
		BandwidthSmoothingFactor:     float32(c.BandwidthSmoothingFactor),
		PacketHeaderSize:             c.PacketHeaderSize,
	}
}

// newEndpoint makes an endpoint with a private pool, as the C library
// behaves.
func newEndpoint(t *testing.T, c jsonConfig) *reliable.Endpoint {
	t.Helper()
	e, err := reliable.New(c.config(), nil)
	if err != nil {
		t.Fatalf("config %+v: %v", c, err)
	}
	return e
}

// hexBytes is a byte string in lowercase hex.
type hexBytes []byte

func (h *hexBytes) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	d, err := hex.DecodeString(s)
	*h = d
	return err
}

// counterNames are the vectors' counter names, in the library's order.
var counterNames = func() map[string]reliable.Counter {
	m := make(map[string]reliable.Counter)
	for c := reliable.Counter(0); c < reliable.NumCounters; c++ {
		m[c.String()] = c
	}
	return m
}()

// payloadRule returns n bytes of the vectors' splitmix64 stream.
func payloadRule(seed uint64, n int) []byte {
	out := make([]byte, 0, n+8)
	x := seed
	for len(out) < n {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		out = binary.LittleEndian.AppendUint64(out, z^z>>31)
	}
	return out[:n]
}

// datagrams returns every datagram of p.
func datagrams(t testing.TB, p reliable.Packet) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < p.Datagrams(); i++ {
		b := make([]byte, p.DatagramLen(i))
		n, err := p.WriteDatagram(i, b)
		if err != nil || n != len(b) {
			t.Fatalf("WriteDatagram(%d): %d, %v", i, n, err)
		}
		out = append(out, b)
	}
	return out
}

package reliable_test

import (
	"bytes"
	"errors"
	"strconv"
	"testing"

	"github.com/netcode-go/netcode/reliable"
)

// TestReliableVectors checks the endpoint against the C library's vectors
// (testdata/vectors, or $RELIABLE_VECTORS).
func TestReliableVectors(t *testing.T) {
	t.Run("headers", testHeaderVectors)
	t.Run("receive_decode", testReceiveDecodeVectors)
	t.Run("fragmentation", testFragmentationVectors)
	t.Run("ack_scenarios", testAckScenarioVectors)
	t.Run("stats", testStatsVectors)
}

func testHeaderVectors(t *testing.T) {
	var file struct {
		Vectors []struct {
			Sequence uint16   `json:"sequence"`
			Ack      uint16   `json:"ack"`
			AckBits  uint32   `json:"ack_bits"`
			Header   hexBytes `json:"header"`
			Case     string   `json:"case"`
		} `json:"vectors"`
	}
	loadVectors(t, "packet_headers.json", &file)
	for _, v := range file.Vectors {
		h := reliable.Header{Sequence: v.Sequence, Ack: v.Ack, AckBits: v.AckBits}
		var buf [reliable.MaxHeaderBytes]byte
		n := reliable.WriteHeader(buf[:], h)
		if !bytes.Equal(buf[:n], v.Header) || reliable.HeaderLen(h) != n {
			t.Errorf("%s: WriteHeader(%+v) = %x, want %x", v.Case, h, buf[:n], v.Header)
		}
		got, m, r := reliable.ReadHeader(v.Header)
		if r != reliable.DropNone || m != len(v.Header) || got != h {
			t.Errorf("%s: ReadHeader(%x) = %+v, %d, %v; want %+v, %d", v.Case, v.Header, got, m, r, h, len(v.Header))
		}
		for k := 0; k < len(v.Header); k++ {
			if _, _, r := reliable.ReadHeader(v.Header[:k]); r != reliable.DropHeaderTruncated {
				t.Errorf("%s: ReadHeader of %d-byte prefix: %v, want header_truncated", v.Case, k, r)
			}
		}
	}
	t.Logf("%d header vectors", len(file.Vectors))
	if len(file.Vectors) == 0 {
		t.Error("no header vectors")
	}
}

func testReceiveDecodeVectors(t *testing.T) {
	var file struct {
		Vectors []struct {
			Name              string            `json:"name"`
			Config            jsonConfig        `json:"config"`
			PrecededBy        []hexBytes        `json:"preceded_by"`
			Packet            hexBytes          `json:"packet"`
			Expect            string            `json:"expect"`
			Reason            string            `json:"reason"`
			DeliveredSequence *uint16           `json:"delivered_sequence"`
			DeliveredPayload  *hexBytes         `json:"delivered_payload"`
			CountersDelta     map[string]uint64 `json:"counters_delta"`
		} `json:"vectors"`
	}
	loadVectors(t, "receive_decode.json", &file)
	rejects := 0
	for _, v := range file.Vectors {
		e := newEndpoint(t, v.Config)
		for i, p := range v.PrecededBy {
			if _, r := e.Receive(p); r != reliable.DropNone {
				t.Errorf("%s: preceding datagram %d dropped: %v", v.Name, i, r)
			}
		}
		before := e.Counters()
		d, r := e.Receive(v.Packet)
		after := e.Counters()

		switch v.Expect {
		case "accept":
			if r != reliable.DropNone || !d.Delivered {
				t.Errorf("%s: got %v (delivered %v), want accept", v.Name, r, d.Delivered)
			}
		case "buffered":
			if r != reliable.DropNone || d.Delivered {
				t.Errorf("%s: got %v (delivered %v), want buffered", v.Name, r, d.Delivered)
			}
		case "reject":
			rejects++
			if r.String() != v.Reason || d.Delivered {
				t.Errorf("%s: got %v (delivered %v), want reject %s", v.Name, r, d.Delivered, v.Reason)
			}
		default:
			t.Errorf("%s: unknown expect %q", v.Name, v.Expect)
		}
		if (v.DeliveredSequence != nil) != d.Delivered {
			t.Errorf("%s: delivered %v, vector says %v", v.Name, d.Delivered, v.DeliveredSequence != nil)
		}
		if v.DeliveredSequence != nil && d.Delivered {
			if d.Sequence != *v.DeliveredSequence {
				t.Errorf("%s: delivered sequence %d, want %d", v.Name, d.Sequence, *v.DeliveredSequence)
			}
			if v.DeliveredPayload != nil && !bytes.Equal(d.Payload, *v.DeliveredPayload) {
				t.Errorf("%s: delivered payload %x, want %x", v.Name, d.Payload, []byte(*v.DeliveredPayload))
			}
		}
		for name := range v.CountersDelta {
			if _, ok := counterNames[name]; !ok {
				t.Errorf("%s: unknown counter %q", v.Name, name)
			}
		}
		for c := reliable.Counter(0); c < reliable.NumCounters; c++ {
			if got, want := after[c]-before[c], v.CountersDelta[c.String()]; got != want {
				t.Errorf("%s: %v changed by %d, want %d", v.Name, c, got, want)
			}
		}
	}
	t.Logf("%d receive vectors, %d rejects", len(file.Vectors), rejects)
	if len(file.Vectors) == 0 {
		t.Error("no receive vectors")
	}
}

func testFragmentationVectors(t *testing.T) {
	var file struct {
		Vectors []struct {
			Name   string     `json:"name"`
			Config jsonConfig `json:"config"`
			Setup  struct {
				PriorSends int      `json:"prior_sends"`
				Received   []uint16 `json:"received"`
			} `json:"setup"`
			PayloadBytes int       `json:"payload_bytes"`
			PayloadSeed  string    `json:"payload_seed"`
			Payload      *hexBytes `json:"payload"`
			Sequence     uint16    `json:"sequence"`
			Sent         bool      `json:"sent"`
			NextSequence uint16    `json:"next_sequence_after"`
			Header       struct {
				Sequence uint16   `json:"sequence"`
				Ack      uint16   `json:"ack"`
				AckBits  uint32   `json:"ack_bits"`
				Bytes    hexBytes `json:"bytes"`
			} `json:"header"`
			Fragmented    bool              `json:"fragmented"`
			NumDatagrams  int               `json:"num_datagrams"`
			Datagrams     []hexBytes        `json:"datagrams"`
			CountersAfter map[string]uint64 `json:"counters_after"`
			ReverseOrder  bool              `json:"fresh_receiver_reverse_order_delivers"`
		} `json:"vectors"`
	}
	loadVectors(t, "fragmentation.json", &file)
	for _, v := range file.Vectors {
		e := newEndpoint(t, v.Config)
		for i := 0; i < v.Setup.PriorSends; i++ {
			if _, err := e.Send([]byte{0}); err != nil {
				t.Fatalf("%s: prior send: %v", v.Name, err)
			}
		}
		for _, s := range v.Setup.Received {
			var b [reliable.MaxHeaderBytes + 1]byte
			n := reliable.WriteHeader(b[:], reliable.Header{Sequence: s})
			b[n] = 0xab
			if d, r := e.Receive(b[:n+1]); !d.Delivered {
				t.Fatalf("%s: setup packet %d: %v", v.Name, s, r)
			}
		}
		seed, err := strconv.ParseUint(v.PayloadSeed, 10, 64)
		if err != nil {
			t.Fatalf("%s: seed: %v", v.Name, err)
		}
		payload := payloadRule(seed, v.PayloadBytes)
		if v.Payload != nil && !bytes.Equal(payload, *v.Payload) {
			t.Fatalf("%s: payload rule disagrees with the vector's payload", v.Name)
		}
		before := e.Counters()
		if got := e.NextSequence(); got != v.Sequence {
			t.Errorf("%s: sequence before send %d, want %d", v.Name, got, v.Sequence)
		}
		p, err := e.Send(payload)
		if sent := err == nil; sent != v.Sent {
			t.Errorf("%s: sent %v (%v), want %v", v.Name, sent, err, v.Sent)
		}
		if !v.Sent && !errors.Is(err, reliable.ErrPacketTooLarge) {
			t.Errorf("%s: error %v, want ErrPacketTooLarge", v.Name, err)
		}
		if got := e.NextSequence(); got != v.NextSequence {
			t.Errorf("%s: next sequence %d, want %d", v.Name, got, v.NextSequence)
		}
		after := e.Counters()
		for name, want := range v.CountersAfter {
			c, ok := counterNames[name]
			if !ok {
				t.Errorf("%s: unknown counter %q", v.Name, name)
				continue
			}
			if got := after[c] - before[c]; got != want {
				t.Errorf("%s: %s %d, want %d", v.Name, name, got, want)
			}
		}
		got := datagrams(t, p)
		if len(got) != v.NumDatagrams || len(got) != len(v.Datagrams) {
			t.Errorf("%s: %d datagrams, want %d", v.Name, len(got), v.NumDatagrams)
			continue
		}
		if v.Sent {
			if p.Sequence() != v.Header.Sequence || (p.Fragments() > 0) != v.Fragmented {
				t.Errorf("%s: sequence %d fragments %d; want %d fragmented %v", v.Name, p.Sequence(), p.Fragments(), v.Header.Sequence, v.Fragmented)
			}
			h, n, r := reliable.ReadHeader(v.Header.Bytes)
			want := reliable.Header{Sequence: v.Header.Sequence, Ack: v.Header.Ack, AckBits: v.Header.AckBits}
			if r != reliable.DropNone || n != len(v.Header.Bytes) || h != want {
				t.Errorf("%s: vector header %x reads %+v, want %+v", v.Name, v.Header.Bytes, h, want)
			}
		}
		for i := range got {
			if !bytes.Equal(got[i], v.Datagrams[i]) {
				t.Errorf("%s: datagram %d\n got %x\nwant %x", v.Name, i, got[i], []byte(v.Datagrams[i]))
			}
		}
		// A fresh receiver, fed the datagrams last to first.
		rx := newEndpoint(t, v.Config)
		delivered := 0
		for i := len(got) - 1; i >= 0; i-- {
			d, _ := rx.Receive(got[i])
			if d.Delivered {
				delivered++
				if !bytes.Equal(d.Payload, payload) || d.Sequence != v.Sequence {
					t.Errorf("%s: reverse order delivered sequence %d, %d bytes: not the payload", v.Name, d.Sequence, len(d.Payload))
				}
			}
		}
		if (delivered == 1) != v.ReverseOrder || delivered > 1 {
			t.Errorf("%s: reverse order delivered %d times, vector says %v", v.Name, delivered, v.ReverseOrder)
		}
	}
	t.Logf("%d fragmentation vectors", len(file.Vectors))
	if len(file.Vectors) == 0 {
		t.Error("no fragmentation vectors")
	}
}

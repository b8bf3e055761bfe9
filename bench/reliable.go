package bench

import (
	"fmt"
	"slices"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/reliable"
)

// maxPayload is the largest payload a side may send: a netcode payload,
// or with reliable endpoints (rel not nil) their MaxPacketSize.
func maxPayload(rel *reliable.Config) int {
	if rel != nil {
		return rel.MaxPacketSize
	}
	return codec.MaxPayloadBytes
}

// QueueSize is an engine queue size (ServerConfig.EventQueueSize,
// SendQueueSize) with room for packets payloads of payloadBytes each (a
// payload longer than 1,200 bytes, a reliable packet, takes one entry per
// 1,200 bytes): a power of two from engine.DefaultQueueSize to 2^18.
func QueueSize(packets, payloadBytes int) int {
	need := packets * max(1, (payloadBytes+codec.MaxPayloadBytes-1)/codec.MaxPayloadBytes)
	n := engine.DefaultQueueSize
	for n < need && n < 1<<18 {
		n <<= 1
	}
	return n
}

// ReliableMark is one side's reliable endpoints at one instant: their
// counters summed over connections and each one's RTT estimates.
// WindowFigures makes a window's figures of four.
type ReliableMark struct {
	Sent, Acked uint64 // reliable packets sent, and those the peer acked
	// Datagrams is what the side's sockets sent: every fragment, and the
	// few keep-alives and control packets beside them.
	Datagrams uint64
	// RTTs and RTTAvgs are the RTT and RTTAvg (ms) of the endpoints that
	// have an estimate.
	RTTs, RTTAvgs []float32
}

// ReadServer reads srv's connected slots into m, reusing its slices.
func (m *ReliableMark) ReadServer(srv *engine.Server) {
	*m = ReliableMark{RTTs: m.RTTs[:0], RTTAvgs: m.RTTAvgs[:0], Datagrams: srv.Stats().PacketsOut}
	for i := range srv.MaxClients() {
		st, err := srv.ReliableStats(i)
		if err != nil {
			continue // free slot, or endpoints off
		}
		m.add(st)
	}
}

func (m *ReliableMark) add(st engine.ReliableStats) {
	m.Sent += st.PacketsSent
	m.Acked += st.PacketsAcked
	if st.RTT > 0 {
		m.RTTs = append(m.RTTs, st.RTT)
		m.RTTAvgs = append(m.RTTAvgs, st.RTTAvg)
	}
}

// ReliableFigures are what one side's reliable endpoints measured over a
// window: the RTT they estimate (beside the load's own latency
// histogram), how many of the side's packets the peer acked, and how many
// datagrams a packet took.
type ReliableFigures struct {
	// Endpoints is how many endpoints had an RTT estimate at the window's
	// end; RTTMs is the median of their reliable.Stats.RTT (smoothed by
	// 0.25% per sample: its first samples weigh for hundreds of packets),
	// RTTAvgMs of their RTTAvg (the mean of their last 512 samples).
	Endpoints int     `json:"endpoints"`
	RTTMs     float64 `json:"rtt_ms"`
	RTTAvgMs  float64 `json:"rtt_avg_ms"`
	// Sent and Acked are the side's reliable packets over the window and
	// its drain, acks counted as they arrive, and AckRatio is Acked /
	// Sent. A side that sends outside the window (a game server) misses
	// the acks of its last packets and counts those of packets from
	// before the window, so its ratio may exceed 1.
	Sent     uint64  `json:"packets_sent"`
	Acked    uint64  `json:"packets_acked"`
	AckRatio float64 `json:"ack_ratio"`
	// DatagramsPerPacket is the side's datagrams sent / reliable packets
	// sent while the load sent: the fragments per packet.
	DatagramsPerPacket float64 `json:"datagrams_per_packet"`
}

// WindowFigures returns a window's figures from four marks of one side:
// b and e span the window with its lead and drain (acks of the window's
// last packets arrive in the drain), sb and se the time the load sent in
// (the lead and the drain carry keep-alives, not packets).
func WindowFigures(b, sb, se, e *ReliableMark) *ReliableFigures {
	// A client that reconnected within the window restarted its counters.
	sub := func(x, y uint64) uint64 { return x - min(x, y) }
	f := &ReliableFigures{Endpoints: len(e.RTTs), Sent: sub(e.Sent, b.Sent), Acked: sub(e.Acked, b.Acked)}
	if f.Sent > 0 {
		f.AckRatio = float64(f.Acked) / float64(f.Sent)
	}
	if n := sub(se.Sent, sb.Sent); n > 0 {
		f.DatagramsPerPacket = float64(sub(se.Datagrams, sb.Datagrams)) / float64(n)
	}
	f.RTTMs, f.RTTAvgMs = median(e.RTTs), median(e.RTTAvgs)
	return f
}

func median(v []float32) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return float64(s[len(s)/2])
}

// String is the figures' summary line.
func (f *ReliableFigures) String() string {
	return fmt.Sprintf("RTT %.3f ms, avg %.3f ms (medians of %d), %d of %d packets acked (%.4f), %.2f datagrams/packet",
		f.RTTMs, f.RTTAvgMs, f.Endpoints, f.Acked, f.Sent, f.AckRatio, f.DatagramsPerPacket)
}

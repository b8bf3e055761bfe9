package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/netcode-go/netcode/engine"
)

// MaxLoadClients bounds LoadConfig.Clients.
const MaxLoadClients = 1 << 16

// LoadTotals are a Load's counters over the current window. In game mode
// Sent is the snapshots the server owed the active clients in the window
// (Ticks × Active), Received those that arrived, and Inputs the inputs
// the clients sent.
type LoadTotals struct {
	Elapsed    time.Duration // since BeginWindow
	Connected  int           // clients connected now
	Active     int           // clients meant to be connected
	Sent       uint64
	Received   uint64 // distinct echoes or snapshots
	Duplicates uint64
	Reordered  uint64
	TooOld     uint64
	Bad        uint64 // echoes without a readable stamp
	SendLag    uint64
	Handshakes uint64 // completed handshakes (LoadHandshake)
	Failures   uint64 // handshakes that ended in an error state
	// FailedIn counts Failures by the error state they ended in, indexed
	// by -state (engine.ConnectionDenied is 1).
	FailedIn [8]uint64
	// Game: inputs sent; the window's ticks (from the lowest tick number
	// seen to the highest); the active clients that missed a snapshot, and
	// the largest share one of them missed.
	Inputs          uint64
	Ticks           uint64
	ClientsWithLoss int
	WorstClientLoss float64
	// KernelCounted is how many replies the load's XDP program counted
	// (and dropped) for clients that do not open them; Received includes
	// them (in game mode, those of the window's active clients).
	KernelCounted uint64
	// Hist is a merged copy of the window's latencies (nanoseconds): echo
	// round trips, or the snapshots' send-to-receipt times, of the clients
	// that open their replies.
	Hist *hdrhistogram.Histogram

	// tickLo and tickHi bound the tick numbers seen (game).
	tickLo, tickHi uint64
}

// FailureStates lists the error states handshakes ended in, with their
// counts: "connection denied 3, ...".
func (t *LoadTotals) FailureStates() string {
	var f []string
	for i, n := range t.FailedIn {
		if n > 0 {
			f = append(f, fmt.Sprintf("%v %d", engine.ClientState(-i), n))
		}
	}
	return strings.Join(f, ", ")
}

// Lost returns Sent - Received, or 0.
func (t *LoadTotals) Lost() uint64 {
	if t.Received >= t.Sent {
		return 0
	}
	return t.Sent - t.Received
}

// LossRatio returns Lost / Sent (0 when nothing was sent).
func (t *LoadTotals) LossRatio() float64 {
	if t.Sent == 0 {
		return 0
	}
	return float64(t.Lost()) / float64(t.Sent)
}

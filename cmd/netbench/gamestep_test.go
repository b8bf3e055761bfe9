//go:build linux

package main

import (
	"testing"

	"github.com/netcode-go/netcode/bench"
)

// TestGameStep: a game sweep's step fails on lost snapshots, on inputs
// the server did not receive (when its window is known), and otherwise
// holds.
func TestGameStep(t *testing.T) {
	const players, sent = 1000, 120000
	for _, c := range []struct {
		name     string
		received uint64 // snapshots
		server   *bench.ServerWindow
		why      string
	}{
		{"clean", sent, &bench.ServerWindow{Inputs: sent}, ""},
		{"no server window", sent, nil, ""},
		{"snapshots lost", sent - 1000, &bench.ServerWindow{Inputs: sent}, "loss > 0.1%"},
		{"inputs lost", sent, &bench.ServerWindow{Inputs: sent - 1000}, "inputs lost > 0.1%"},
		{"inputs lost within the bound", sent, &bench.ServerWindow{Inputs: sent - 100}, ""},
	} {
		h := bench.NewHistogram()
		bench.RecordLatency(h, 5000)
		w := &window{
			tot: bench.LoadTotals{Connected: players, Active: players, Sent: sent, Received: c.received,
				Inputs: sent, Ticks: 120, Hist: h},
			sendS:  2,
			server: c.server,
		}
		st := gameStepOf(w, 60)
		if st.Why != c.why || st.Sustained != (c.why == "") {
			t.Errorf("%s: step %q (sustained %v); want %q", c.name, st.Why, st.Sustained, c.why)
		}
	}
}

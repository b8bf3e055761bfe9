package metrics_test

import (
	"strings"
	"testing"

	"github.com/netcode-go/netcode/engine/metrics"
	"github.com/netcode-go/netcode/reliable"
)

// Every reliable drop reason has its own label, apart from the codec's and
// the server's.
func TestReliableDropReasonNames(t *testing.T) {
	seen := map[string]bool{}
	for r := reliable.DropNone + 1; r < reliable.NumDropReasons; r++ {
		name := metrics.ReliableDropReasonName(r)
		if !strings.HasPrefix(name, "reliable_") || seen[name] || strings.ContainsAny(name, " -") {
			t.Fatalf("reason %d: label %q (empty, duplicate or not a label value)", r, name)
		}
		seen[name] = true
	}
	if metrics.ReliableDropReasonName(reliable.DropNone) != "" || metrics.ReliableDropReasonName(reliable.NumDropReasons) != "" {
		t.Fatal("DropNone or an unknown reason has a label")
	}
}

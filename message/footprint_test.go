package message

import (
	"runtime"
	"testing"
)

// TestFootprint: Footprint accounts for what New allocates (within 5%),
// and the default config's figures, for the README's bounds.
func TestFootprint(t *testing.T) {
	noBlocks := DefaultConfig()
	noBlocks.Channels[0].MaxBlockSize = 0
	small := Config{Channels: []ChannelConfig{
		{Kind: ReliableOrdered, MaxMessageSize: 64, SendQueueSize: 64, ReceiveQueueSize: 64},
		{Kind: Unreliable, MaxMessageSize: 256, SendQueueSize: 8, ReceiveQueueSize: 8},
	}, SentPackets: 64}
	for name, cfg := range map[string]Config{"default": DefaultConfig(), "default without blocks": noBlocks, "small": small} {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		c := mustNew(t, cfg)
		runtime.ReadMemStats(&m1)
		got, fp := int(m1.TotalAlloc-m0.TotalAlloc), c.Footprint()
		t.Logf("%s: Footprint %d bytes (%.0f KiB), New allocated %d", name, fp, float64(fp)/1024, got)
		if float64(fp) < 0.95*float64(got) || float64(fp) > 1.05*float64(got) {
			t.Errorf("%s: Footprint %d; New allocated %d", name, fp, got)
		}
	}
}
